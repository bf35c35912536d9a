#!/usr/bin/env bash
# Wall and CPU seconds of `cleave inspect` for two binaries, run alternately (A B A B ...) on
# the scaling benchmark's graphs, and the ratio B/A of their medians: on a loaded host the
# load falls on both alike, so the ratio means more than either time.
# usage: bench/scaling/compare_inspect.sh A/cleave B/cleave [rounds] [counts...]
#        (default: 5 rounds; 200000 nodes)
set -euo pipefail
a=$1
b=$2
rounds=${3:-5}
shift 3 || shift $#
counts=${*:-200000}
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "| graph | nodes | A wall s (median) | B wall s (median) | B/A wall | A CPU s | B CPU s | B/A CPU |"
echo "|---|---|---|---|---|---|---|---|"
for kind in chain dag; do
  for n in $counts; do
    model=$work/$kind$n.onnx
    /usr/bin/python3 "$here/make_graph.py" "$kind" "$n" "$model"
    : >"$work/a" && : >"$work/b"
    for ((round = 0; round < rounds; ++round)); do
      for which in a b; do
        binary=$a
        [ "$which" = b ] && binary=$b
        /usr/bin/time -f "%e %U %S" -o "$work/time" "$binary" inspect "$model" >/dev/null
        cat "$work/time" >>"$work/$which"
      done
    done
    a_wall=$(awk '{print $1}' "$work/a" | median)
    b_wall=$(awk '{print $1}' "$work/b" | median)
    a_cpu=$(awk '{print $2 + $3}' "$work/a" | median)
    b_cpu=$(awk '{print $2 + $3}' "$work/b" | median)
    awk -v k="$kind" -v n="$n" -v aw="$a_wall" -v bw="$b_wall" -v ac="$a_cpu" -v bc="$b_cpu" \
      'BEGIN {printf "| %s | %d | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f |\n",
              k, n, aw, bw, bw / aw, ac, bc, bc / ac}'
  done
done
