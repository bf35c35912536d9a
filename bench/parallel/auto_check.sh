#!/usr/bin/env bash
# `cleave run --plan auto` with and without its timed check against the sequential plan, in
# alternating child processes, on corpus models planned from the paper's static weights (which
# favour parallel plans that this 2-core machine runs slower). Writes a markdown table.
# Usage (from the repository root): bench/parallel/auto_check.sh [build/cleave] [rounds] [models dir]
set -euo pipefail
cleave=${1:-build/cleave}
rounds=${2:-3}
models=${3:-$HOME/.cache/cleave/models}
echo "| model | round | auto's prediction picks | without check ms | with check: kept | with check ms |"
echo "|---|---|---|---:|---|---:|"
for model in googlenet inception_v3 shufflenet_v2_x1_0 squeezenet1_0; do
  for round in $(seq 1 "$rounds"); do
    without=$("$cleave" run "$models/$model.onnx" --plan auto --costs static --workers 2 \
      --warmup 3 --repeat 10 --no-auto-check --json)
    with=$("$cleave" run "$models/$model.onnx" --plan auto --costs static --workers 2 \
      --warmup 3 --repeat 10 --json)
    python3 - "$model" "$round" "$without" "$with" <<'PY'
import json, sys
model, round_, without, with_ = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
check = with_["plan"].get("auto_check", {})
print(f"| {model} | {round_} | {without['plan']['strategy']} | {without['latency_ms']['median']:.2f} | "
      f"{with_['plan']['strategy']} | {with_['latency_ms']['median']:.2f} |")
PY
  done
done
