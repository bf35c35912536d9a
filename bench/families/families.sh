#!/bin/bash
# Times auto's candidate families on every model of a folder at several core counts
# (`cleave bench --families`), one JSON per model and core count; summarize.py tabulates them.
# Usage: bench/families/families.sh CLEAVE MODELS_DIR OUT_DIR [CORES...]   (default cores: 2)
set -u
cleave=$1 models=$2 out=$3
shift 3
cores=("${@:-2}")
mkdir -p "$out"
for n in "${cores[@]}"; do
  for model in "$models"/*.onnx; do
    name=$(basename "$model" .onnx)
    echo "== $name on $n core(s): $(uptime)" >&2
    taskset -c "0-$((n - 1))" "$cleave" bench "$model" --families --workers "$n" --repeat 10 \
      --warmup 3 --json >"$out/${name}_w$n.json" || echo "failed: $name on $n core(s)" >&2
  done
done
