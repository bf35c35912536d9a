#!/bin/bash
# Where a 2-worker plan's tasks lose time against the 1-worker plan: MODEL's lc plan (2 workers)
# and sequential plan, and worker_variants.py's plans of lc's order (one worker; worker 0 of two
# with worker 1 idle; lc with the cores exchanged), each traced, interleaved, PASSES passes.
# Env: BIN (cleave), OUT (folder), MODEL, PASSES (5), VARIANTS (the plans to run, by name),
# RUN_ARGS (extra `cleave run` options). On a shared host: BIN="bench/families/hold.sh cleave".
# worker_split.py OUT summarises.
set -u
export CLEAVE_CACHE_DIR=${CLEAVE_CACHE_DIR:-/tmp/worker_split_cache}
M=$HOME/.cache/cleave/models/${MODEL:-shufflenet_v2_x1_0}.onnx
D=${OUT:-/tmp/worker_split}; mkdir -p $D
B=${BIN:-build/cleave}
here=$(dirname "$0")
[ -f $D/lc.json ] || $B plan $M --strategy lc --workers 2 -o $D/lc.json >/dev/null 2>&1
[ -f $D/seq.json ] || $B plan $M --strategy sequential --workers 1 -o $D/seq.json >/dev/null 2>&1
"$here/worker_variants.py" $D/lc.json $D
for i in $(seq 1 ${PASSES:-5}); do
  for v in ${VARIANTS:-seq one idle idle_free idle_core1 lc swap}; do
    echo "== $v $i $(date +%T) $(uptime)"
    $B run $M --plan $D/$v.json --repeat 30 --warmup 5 --trace $D/$v-$i.trace.json --fixed-threads \
      --json ${RUN_ARGS:-} >$D/$v-$i.out 2>$D/$v-$i.err
  done
done
echo done
