#!/bin/bash
# The level check before and after: `cleave bench --families` of two binaries per model at 2
# cores, alternating which goes first, each on a cache of its own (OUT/cache-before, -after).
# PASS 0 makes the profiles (empty caches); a later pass reuses them (CLEAVE_PROFILE_REUSE=always
# unless set), so the after binary checks their level and the before one predicts as profiled.
# Usage: level_before_after.sh BEFORE AFTER MODELS_DIR OUT PASS; predictions.py
# --own-predictions before=OUT/before-PASS after=OUT/after-PASS tabulates a pass.
set -u
before=$1 after=$2 models=$3 root=$4 pass=$5
mkdir -p "$root/before-$pass" "$root/after-$pass"
[ "$pass" -gt 0 ] && export CLEAVE_PROFILE_REUSE=${CLEAVE_PROFILE_REUSE:-always}
i=0
for model in "$models"/*.onnx; do
  name=$(basename "$model" .onnx)
  if [ $(((i + pass) % 2)) -eq 0 ]; then order="before after"; else order="after before"; fi
  for which in $order; do
    binary=$before
    [ "$which" = after ] && binary=$after
    echo "== pass $pass $which $name $(date -u +%T) $(uptime)"
    CLEAVE_CACHE_DIR=$root/cache-$which taskset -c 0-1 "$binary" bench "$model" --families \
      --workers 2 --repeat 10 --warmup 3 --json >"$root/$which-$pass/${name}_w2.json" \
      2>"$root/$which-$pass/${name}.err" || echo "failed: $which $name" >&2
  done
  i=$((i + 1))
done
