#!/bin/bash
# Measured / predicted of `cleave bench --families` with two builds (before and after the
# in-context profile): per model the two back to back, each from an empty cache of its own (a
# fresh profile), the order alternating from model to model; the load (`uptime`) beside each.
# Usage: context_profile_ab.sh OLD_CLEAVE NEW_CLEAVE OUT_DIR MODEL.onnx...
set -euo pipefail
old=$1 new=$2 out=$3
shift 3
mkdir -p "$out"
rm -rf "$out/cache-old" "$out/cache-new"
flip=0
for model in "$@"; do
  name=$(basename "$model" .onnx)
  sides=(old new)
  [ "$flip" = 1 ] && sides=(new old)
  flip=$((1 - flip))
  for side in "${sides[@]}"; do
    binary=$old
    [ "$side" = new ] && binary=$new
    uptime > "$out/$name.$side.uptime"
    start=$(date +%s.%N)
    CLEAVE_CACHE_DIR="$out/cache-$side" "$binary" bench "$model" --families --workers 2 \
      --repeat 20 --warmup 3 --json > "$out/$name.$side.json" 2> "$out/$name.$side.log"
    echo "$(date +%s.%N) - $start" | bc > "$out/$name.$side.seconds"
    echo "$name $side: $(cat "$out/$name.$side.seconds") s, load $(cut -d, -f3- "$out/$name.$side.uptime")"
  done
done
