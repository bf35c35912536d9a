#!/bin/bash
# Before/after of the thread executor's run: binary A against binary B, interleaved per model and
# pass (which goes first alternates): MODEL's lc plan (made once by A) with `cleave run --plan`, and
# the sequential executor at 1 thread (`cleave run --threads 1`). caller_ab.py OUT summarises.
# Env: A, B (binaries), OUT (folder), MODELS, PASSES (4), REPEAT (40).
set -u
export CLEAVE_CACHE_DIR=${CLEAVE_CACHE_DIR:-/tmp/caller_ab_cache}
A=${A:?binary before}; B=${B:?binary after}
OUT=${OUT:-/tmp/caller_ab}; mkdir -p $OUT
MODELS=${MODELS:-shufflenet_v2_x1_0 mobilenet_v2 mnasnet1_0}
for m in $MODELS; do
  [ -f $OUT/$m.lc.json ] || $A plan ~/.cache/cleave/models/$m.onnx --strategy lc --workers 2 \
    -o $OUT/$m.lc.json >/dev/null 2>&1
done
for i in $(seq 1 ${PASSES:-4}); do
  echo "pass $i $(date +%T) $(uptime)"
  for m in $MODELS; do
    M=~/.cache/cleave/models/$m.onnx
    for first in A B; do
      bb=$first
      if [ $((i % 2)) = 0 ]; then [ $first = A ] && bb=B || bb=A; fi
      eval X=\$$bb
      $X run $M --plan $OUT/$m.lc.json --repeat ${REPEAT:-40} --warmup 10 --fixed-threads \
        --layouts blocked --json >$OUT/$m.lc.$bb.$i.json 2>/dev/null
      $X run $M --threads 1 --repeat ${REPEAT:-40} --warmup 10 --fixed-threads --layouts blocked \
        --json >$OUT/$m.seq.$bb.$i.json 2>/dev/null
    done
  done
done
