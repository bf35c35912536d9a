#!/usr/bin/env bash
# Instructions executed by `cleave inspect` (and the child process that runs ONNX's shape
# inference) on the scaling benchmark's graphs, counted by valgrind's callgrind: a measure that
# other processes on the host do not change, for comparing two binaries on a loaded machine.
# Prints one row per graph: the instructions of the cleave process, of the inference child and
# their sum (millions). With KEEP=DIR the callgrind files stay in DIR for callgrind_annotate.
# usage: bench/scaling/count_instructions.sh [build/cleave] [counts...]   (default: 20000 50000)
set -euo pipefail
cleave=${1:-build/cleave}
shift || true
counts=${*:-20000 50000}
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${KEEP:-}

echo "| graph | nodes | cleave (M instr.) | inference child (M instr.) | total (M instr.) |"
echo "|---|---|---|---|---|"
for kind in chain dag; do
  for n in $counts; do
    model=$work/$kind$n.onnx
    /usr/bin/python3 "$here/make_graph.py" "$kind" "$n" "$model"
    out=$work/out.$kind$n
    mkdir -p "$out"
    # Counters are dumped and zeroed at fork(), so the child's files hold only what the child
    # ran (otherwise it inherits the parent's counts so far). GOMP_SPINCOUNT set: the command
    # would otherwise execute itself again to set it (runtime/wait_policy.h).
    GOMP_SPINCOUNT=1000 valgrind --tool=callgrind --dump-before=fork \
      --callgrind-out-file="$out/callgrind.%p" "$cleave" inspect "$model" >/dev/null 2>"$out/log"
    # Files are callgrind.PID[.PART]: the lower pid is cleave, the higher the forked child.
    mapfile -t pids < <(ls "$out" | sed -n 's/^callgrind\.\([0-9]*\).*/\1/p' | sort -n -u)
    sum_of() {
      find "$out" -name "callgrind.$1" -o -name "callgrind.$1.*" | xargs cat |
        awk '/^summary:/ {s += $2} END {print s + 0}'
    }
    parent=$(sum_of "${pids[0]}")
    child=0
    [ "${#pids[@]}" -gt 1 ] && child=$(sum_of "${pids[1]}")
    awk -v k="$kind" -v n="$n" -v p="$parent" -v c="$child" \
      'BEGIN {printf "| %s | %d | %.0f | %.0f | %.0f |\n", k, n, p / 1e6, c / 1e6, (p + c) / 1e6}'
    if [ -n "$keep" ]; then
      mkdir -p "$keep/$kind$n"
      cp "$out"/callgrind.* "$keep/$kind$n/"
    fi
  done
done
