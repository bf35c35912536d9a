#!/usr/bin/env bash
# How steady a profile's 2-thread whole-run time is on this shared host: two cleave binaries
# (e.g. before and after a change to the profiler) profile the same models ROUNDS times each,
# alternating, each time into an empty cache; beside them, `cleave run --threads 2` medians
# from the second binary. Prints a markdown table of the sorted values.
# Usage (from the repository root):
#   bench/parallel/profile_stability.sh OLD_CLEAVE NEW_CLEAVE [ROUNDS] [MODEL ...]
# Models are corpus names in ~/.cache/cleave/models (default: mnasnet1_0 shufflenet_v2_x1_0).
# HOLD_SECONDS=S stands in for other work on the host: before each profile a busy loop starts
# in its own process for S seconds (pinned to CPU HOLD_CPU when that is set, else wherever the
# scheduler puts it), and the profile starts 0.2 s later.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_CLEAVE NEW_CLEAVE [ROUNDS] [MODEL ...]" >&2
  exit 2
fi
old=$1
new=$2
rounds=${3:-8}
shift $(($# < 3 ? $# : 3))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(mnasnet1_0 shufflenet_v2_x1_0)
corpus=${CLEAVE_CORPUS:-$HOME/.cache/cleave/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hold=${HOLD_SECONDS:-0}
hold_cpu=${HOLD_CPU:-}
start_holder() {
  [ "$hold" != 0 ] || return 0
  if [ -n "$hold_cpu" ]; then
    taskset -c "$hold_cpu" timeout "$hold" sh -c 'while :; do :; done' &
  else
    timeout "$hold" sh -c 'while :; do :; done' &
  fi
  sleep 0.2
}
two_thread_profile() {  # binary model -> ms per run at 2 threads
  rm -rf "$work/cache"
  start_holder
  CLEAVE_CACHE_DIR="$work/cache" "$1" profile "$corpus/$2.onnx" -v --top 0 2>&1 |
    sed -n 's/^profile: 2 thread(s): \([0-9.]*\) ms per run.*/\1/p'
  wait  # for the holder, so that it does not reach the next measurement
}
run_median() {  # binary model -> median ms of `cleave run --threads 2`
  CLEAVE_CACHE_DIR="$work/cache" "$1" run "$corpus/$2.onnx" --threads 2 --warmup 3 --repeat 20 \
    --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["latency_ms"]["median"])'
}
echo "| model | binary | 2-thread ms per run, sorted ($rounds profiles or runs) |"
echo "|---|---|---|"
for model in "${models[@]}"; do
  : >"$work/old" && : >"$work/new" && : >"$work/run"
  for _ in $(seq "$rounds"); do
    two_thread_profile "$old" "$model" >>"$work/old"
    two_thread_profile "$new" "$model" >>"$work/new"
    run_median "$new" "$model" >>"$work/run"
  done
  for kind in old new run; do
    case $kind in
      old) label="profile, $old" ;;
      new) label="profile, $new" ;;
      run) label="run --threads 2, $new" ;;
    esac
    values=$(sort -n "$work/$kind" | awk '{printf "%s%.2f", (NR > 1 ? ", " : ""), $1}')
    echo "| $model | $label | $values |"
  done
done
