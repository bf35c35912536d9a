#!/bin/bash
# A 2-worker lc plan (MODEL, default shufflenet_v2_x1_0) traced beside its sequential plan,
# interleaved, five passes: with the spin policy cleave picks, with waiting workers forced to
# sleep (GOMP_SPINCOUNT=0) and to spin (300000). Env: BIN (cleave), OUT (folder). spin_trace.py OUT
# summarises.
set -u
export CLEAVE_CACHE_DIR=${CLEAVE_CACHE_DIR:-/tmp/spin_trace_cache}
M=$HOME/.cache/cleave/models/${MODEL:-shufflenet_v2_x1_0}.onnx
D=${OUT:-/tmp/spin_trace}; mkdir -p $D
B=${BIN:-build/cleave}
$B plan $M --strategy lc --workers 2 -o $D/lc.json >/dev/null 2>&1
$B plan $M --strategy sequential --workers 1 -o $D/seq.json >/dev/null 2>&1
for i in 1 2 3 4 5; do
  for mode in default spin0 spin300k seq; do
    plan=$D/lc.json; [ $mode = seq ] && plan=$D/seq.json
    case $mode in
      spin0) e=GOMP_SPINCOUNT=0;;
      spin300k) e=GOMP_SPINCOUNT=300000;;
      *) e=CLEAVE_UNUSED=1;;
    esac
    echo "== $mode $i $(date +%T) $(uptime)"
    env $e $B run $M --plan $plan --repeat 30 --warmup 5 --trace $D/$mode-$i.json --fixed-threads --json > $D/$mode-$i.out 2>$D/$mode-$i.err
  done
done
echo done
