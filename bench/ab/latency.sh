#!/usr/bin/env bash
# Before/after latency of two cleave binaries on the same models, taken in one run on this
# noisy host: `cleave run` of each binary alternates ROUNDS times per thread count, and each
# pair of neighbouring runs gives one ratio (after / before). Prints a markdown table with the
# median of the per-run medians, the lowest median and the median paired ratio.
# Usage (from the repository root):
#   bench/ab/latency.sh BEFORE_CLEAVE AFTER_CLEAVE [ROUNDS] [MODEL ...]
# Models are corpus names in ~/.cache/cleave/models (default: efficientnet_b0 regnet_y_400mf).
# RUN_ARGS adds options to every `cleave run`, e.g. RUN_ARGS="--layouts blocked" so that a
# noisy layout choice (each binary makes its own) does not hide the change being measured.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BEFORE_CLEAVE AFTER_CLEAVE [ROUNDS] [MODEL ...]" >&2
  exit 2
fi
before=$1
after=$2
rounds=${3:-12}
shift $(($# < 3 ? $# : 3))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(efficientnet_b0 regnet_y_400mf)
corpus=${CLEAVE_CORPUS:-$HOME/.cache/cleave/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median_ms() {  # before|after model threads -> median ms of one `cleave run`
  local binary=$before
  [ "$1" = after ] && binary=$after
  # Each binary keeps its own layout choices.
  CLEAVE_CACHE_DIR="$work/cache-$1" \
    "$binary" run "$corpus/$2.onnx" --threads "$3" --warmup 10 --repeat 40 --json ${RUN_ARGS:-} |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["latency_ms"]["median"])'
}
echo "| model | threads | before: median of medians (lowest) ms | after: median of medians (lowest) ms | after / before, median of $rounds paired runs |"
echo "|---|---:|---:|---:|---:|"
for model in "${models[@]}"; do
  for threads in 1 2; do
    : >"$work/pairs"
    for _ in $(seq "$rounds"); do
      echo "$(median_ms before "$model" "$threads") $(median_ms after "$model" "$threads")" \
        >>"$work/pairs"
    done
    /usr/bin/python3 - "$work/pairs" "$model" "$threads" <<'PY'
import statistics, sys
pairs = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
before = [p[0] for p in pairs]
after = [p[1] for p in pairs]
ratio = statistics.median(a / b for b, a in pairs)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {statistics.median(before):.3f} ({min(before):.3f}) "
      f"| {statistics.median(after):.3f} ({min(after):.3f}) | {ratio:.3f} |")
PY
  done
done
