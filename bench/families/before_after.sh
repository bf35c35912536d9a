#!/bin/bash
# Times `cleave bench --families` of two cleave binaries back to back on every model of a folder
# at 2 cores, alternating which goes first, with the load beside each run; predictions.py
# tabulates the runs. Usage: before_after.sh BEFORE AFTER MODELS_DIR OUT_DIR RUN_INDEX
set -u
before=$1 after=$2 models=$3 root=$4 run=$5
mkdir -p "$root/before-$run" "$root/after-$run"
i=0
for model in "$models"/*.onnx; do
  name=$(basename "$model" .onnx)
  if [ $(((i + run) % 2)) -eq 0 ]; then order="before after"; else order="after before"; fi
  for which in $order; do
    binary=$before
    [ "$which" = after ] && binary=$after
    echo "== $which $name $(date +%T) $(uptime)"
    "$binary" bench "$model" --families --workers 2 --repeat 10 --warmup 3 --json \
      >"$root/$which-$run/${name}_w2.json" 2>"$root/$which-$run/${name}.err" ||
      echo "failed: $which $name" >&2
  done
  i=$((i + 1))
done
