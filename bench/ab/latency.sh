#!/usr/bin/env bash
# Before/after latency of two cleave binaries on the same models, taken in one run on this
# noisy host: `cleave run` of each binary alternates ROUNDS times per case (which binary goes
# first alternates too), and each pair of neighbouring runs gives one ratio (after / before).
# A MODEL is timed with 1 and with 2 threads; a MODEL:STRATEGY[:SAMPLES] runs one parallel
# plan on 2 workers, made once by the BEFORE binary, so both run exactly the same schedule.
# Prints a markdown table with the median of the per-run medians, the lowest median and the
# median paired ratio.
# Usage (from the repository root):
#   bench/ab/latency.sh BEFORE_CLEAVE AFTER_CLEAVE [ROUNDS] [MODEL | MODEL:STRATEGY[:SAMPLES] ...]
# A MODEL is a corpus name in ~/.cache/cleave/models or a path to an .onnx file (default:
# efficientnet_b0 regnet_y_400mf). RUN_ARGS adds options to every `cleave run`, e.g.
# RUN_ARGS="--layouts blocked" so that a noisy layout choice (each binary makes its own) does
# not hide the change being measured. RANKS=N runs the plan cases on N MPI ranks instead
# (`mpirun -np N ... cleave run --plan`, the plan made for N workers), so that the rank driver
# is measured the same way. Where the binaries fingerprint models differently (the hash
# changed), the after binary runs the before binary's plan under its own fingerprint.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BEFORE_CLEAVE AFTER_CLEAVE [ROUNDS] [MODEL | MODEL:STRATEGY[:SAMPLES] ...]" >&2
  exit 2
fi
before=$1
after=$2
rounds=${3:-12}
shift $(($# < 3 ? $# : 3))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(efficientnet_b0 regnet_y_400mf)
corpus=${CLEAVE_CORPUS:-$HOME/.cache/cleave/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median_ms() {  # before|after model run-options... -> median ms of one `cleave run`
  local binary=$before
  local options=("${@:3}")
  if [ "$1" = after ]; then
    binary=$after
    for i in "${!options[@]}"; do
      [ "${options[$i]}" = "$work/plan.json" ] && options[i]="$work/plan-after.json"
    done
  fi
  local launch=()
  if [ -n "${RANKS:-}" ] && [[ " ${*:3} " == *" --plan "* ]]; then
    launch=(mpirun -np "$RANKS" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1
      -x CLEAVE_CACHE_DIR)
  fi
  # Each binary keeps its own layout choices.
  CLEAVE_CACHE_DIR="$work/cache-$1" \
    "${launch[@]}" "$binary" run "$2" "${options[@]}" --warmup 10 --repeat 40 --json ${RUN_ARGS:-} |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["latency_ms"]["median"])'
}
time_case() {  # model label run-options... -> one table row
  local file=$1 label=$2
  shift 2
  : >"$work/pairs"
  for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then
      b=$(median_ms before "$file" "$@")
      a=$(median_ms after "$file" "$@")
    else
      a=$(median_ms after "$file" "$@")
      b=$(median_ms before "$file" "$@")
    fi
    echo "$b $a" >>"$work/pairs"
  done
  /usr/bin/python3 - "$work/pairs" "$(basename "$file" .onnx)" "$label" <<'PY'
import statistics, sys
pairs = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
before = [p[0] for p in pairs]
after = [p[1] for p in pairs]
ratio = statistics.median(a / b for b, a in pairs)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {statistics.median(before):.3f} ({min(before):.3f}) "
      f"| {statistics.median(after):.3f} ({min(after):.3f}) | {ratio:.3f} |")
PY
}
echo "| model | run | before: median of medians (lowest) ms | after: median of medians (lowest) ms | after / before, median of $rounds paired runs |"
echo "|---|---|---:|---:|---:|"
for spec in "${specs[@]}"; do
  IFS=: read -r model strategy samples <<<"$spec"
  file=$model
  [ -f "$file" ] || file="$corpus/$model.onnx"
  if [ -z "$strategy" ]; then
    for threads in 1 2; do
      time_case "$file" "$threads thread(s)" --threads "$threads"
    done
  else
    samples=${samples:-1}
    plan="$work/plan.json"
    CLEAVE_CACHE_DIR="$work/cache-before" "$before" plan "$file" --strategy "$strategy" \
      --workers "${RANKS:-2}" --samples "$samples" -o "$plan" >/dev/null
    # When the model fingerprint's hash differs between the binaries, the after binary refuses
    # the plan; it then runs the same schedule under its own fingerprint of the model.
    cp "$plan" "$work/plan-after.json"
    refusal=$(CLEAVE_CACHE_DIR="$work/cache-after" "$after" run "$file" --plan "$plan" \
      --repeat 1 2>&1 >/dev/null || true)
    if [[ "$refusal" =~ fingerprint\ ([0-9a-f]+)\ here ]]; then
      /usr/bin/python3 - "$plan" "$work/plan-after.json" "${BASH_REMATCH[1]}" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["model_fingerprint"] = sys.argv[3]
json.dump(plan, open(sys.argv[2], "w"))
PY
    fi
    where="${RANKS:+ on $RANKS ranks}"
    time_case "$file" "$strategy plan$where, $samples sample(s)" --plan "$plan"
  fi
done
