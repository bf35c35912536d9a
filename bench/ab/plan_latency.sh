#!/usr/bin/env bash
# Before/after latency of two cleave binaries running the same parallel plans, taken in one
# run on this noisy host: per plan, `cleave run --plan` of each binary alternates ROUNDS times
# (which binary goes first alternates too), and each pair gives one ratio (after / before).
# The plans are made once, by the BEFORE binary, so both run exactly the same schedule.
# Prints a markdown table with the median of the per-run medians, the lowest median and the
# median paired ratio.
# Usage (from the repository root):
#   bench/ab/plan_latency.sh BEFORE_CLEAVE AFTER_CLEAVE [ROUNDS] [MODEL:STRATEGY[:SAMPLES] ...]
# A MODEL is a corpus name in ~/.cache/cleave/models or a path to an .onnx file. Default:
# googlenet:lc googlenet:switched-hypercluster:2 shufflenet_v2_x1_0:lc.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BEFORE_CLEAVE AFTER_CLEAVE [ROUNDS] [MODEL:STRATEGY[:SAMPLES] ...]" >&2
  exit 2
fi
before=$1
after=$2
rounds=${3:-10}
shift $(($# < 3 ? $# : 3))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(googlenet:lc googlenet:switched-hypercluster:2 shufflenet_v2_x1_0:lc)
corpus=${CLEAVE_CORPUS:-$HOME/.cache/cleave/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CLEAVE_CACHE_DIR="$work/cache"  # One profile per model, shared by both binaries.
median_ms() {  # binary model plan -> median ms of one `cleave run --plan`
  "$1" run "$2" --plan "$3" --warmup 5 --repeat 30 --json |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["latency_ms"]["median"])'
}
echo "| model | plan | before: median of medians (lowest) ms | after: median of medians (lowest) ms | after / before, median of $rounds paired runs |"
echo "|---|---|---:|---:|---:|"
for spec in "${specs[@]}"; do
  IFS=: read -r model strategy samples <<<"$spec"
  samples=${samples:-1}
  file=$model
  [ -f "$file" ] || file="$corpus/$model.onnx"
  plan="$work/plan.json"
  "$before" plan "$file" --strategy "$strategy" --workers 2 --samples "$samples" -o "$plan" >/dev/null
  : >"$work/pairs"
  for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then
      b=$(median_ms "$before" "$file" "$plan")
      a=$(median_ms "$after" "$file" "$plan")
    else
      a=$(median_ms "$after" "$file" "$plan")
      b=$(median_ms "$before" "$file" "$plan")
    fi
    echo "$b $a" >>"$work/pairs"
  done
  /usr/bin/python3 - "$work/pairs" "$(basename "$file" .onnx)" "$strategy, $samples sample(s)" <<'PY'
import statistics, sys
pairs = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
before = [p[0] for p in pairs]
after = [p[1] for p in pairs]
ratio = statistics.median(a / b for b, a in pairs)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {statistics.median(before):.3f} ({min(before):.3f}) "
      f"| {statistics.median(after):.3f} ({min(after):.3f}) | {ratio:.3f} |")
PY
done
