#!/usr/bin/env bash
# Time against node count for inspect, optimize, plan, export-tasks and run, on a Relu chain and
# a random DAG of Adds (bench/scaling/make_graph.py); then schedule --algo heft of export-tasks'
# task graphs with the lower bound. Prints a Markdown table of CPU seconds (user + system, child
# processes included: the isolated shape inference) and wall seconds, one run each; on a shared
# host the wall clock measures the other processes as much as cleave.
# usage: bench/scaling/run.sh [build/cleave] [counts...]
set -euo pipefail
cleave=${1:-build/cleave}
shift || true
counts=${*:-1000 10000 50000 100000 200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CLEAVE_CACHE_DIR=$work/cache CLEAVE_CORE_WAIT_SECONDS=0
here=$(dirname "$0")

seconds() {  # seconds COMMAND...: "cpu / wall" seconds of one run, or "fail(...)"
  if ! timeout 600 /usr/bin/time -f "%U %S %e" -o "$work/time" "$@" >/dev/null 2>"$work/err"; then
    echo "fail($(tail -c 80 "$work/err" | tr '\n|' '  '))"
    return
  fi
  awk '{printf "%.2f / %.2f", $1 + $2, $3}' "$work/time"
}

echo "CPU / wall seconds per command"
echo
echo "| graph | nodes | inspect | inspect --json | optimize | plan (static) | export-tasks (static) | run | schedule heft + bound |"
echo "|---|---|---|---|---|---|---|---|---|"
for kind in chain dag; do
  for n in $counts; do
    model=$work/$kind$n.onnx
    /usr/bin/python3 "$here/make_graph.py" "$kind" "$n" "$model"
    inspect=$(seconds "$cleave" inspect "$model")
    inspect_json=$(seconds "$cleave" inspect "$model" --json)
    optimize=$(seconds "$cleave" optimize "$model" "$work/opt.onnx")
    plan=$(seconds "$cleave" plan "$model" --costs static --strategy lc -o "$work/plan.json")
    export=$(seconds "$cleave" export-tasks "$model" --costs static --no-optimize \
      --machine "$here/../../machines/this_machine.json" -o "$work/tasks.json")
    run=$(seconds "$cleave" run "$model" --layouts blocked)
    schedule=$(seconds "$cleave" schedule "$work/tasks.json" --algo heft)
    echo "| $kind | $n | $inspect | $inspect_json | $optimize | $plan | $export | $run | $schedule |"
  done
done
