#!/bin/bash
# Whether a profile's 1-thread whole run depends on how many threads the profile measures:
# `cleave profile MODEL --max-threads 1` and `--max-threads 2` (never cached), and the
# sequential executor's own run (`cleave run MODEL --threads 1`), interleaved, PASSES passes.
# Env: BIN (cleave; on a shared host "bench/families/hold.sh cleave"), OUT (folder), MODEL,
# PASSES (5). Prints one line per command: the 1-thread
# in-context ms and the busy-core ms of each profile, the run's median ms.
set -u
export CLEAVE_CACHE_DIR=${CLEAVE_CACHE_DIR:-/tmp/profile_pairs_cache}
M=$HOME/.cache/cleave/models/${MODEL:-shufflenet_v2_x1_0}.onnx
D=${OUT:-/tmp/profile_pairs}; mkdir -p $D
B=${BIN:-build/cleave}
for i in $(seq 1 ${PASSES:-5}); do
  for v in t1 t2 run; do
    case $v in
      t1) $B profile $M --max-threads 1 --no-cache -v >$D/$v-$i.out 2>&1 ;;
      t2) $B profile $M --max-threads 2 --no-cache -v >$D/$v-$i.out 2>&1 ;;
      run) $B run $M --threads 1 --repeat 60 --warmup 5 --fixed-threads --json >$D/$v-$i.out 2>&1 ;;
    esac
    one=$(grep -o '1 thread(s), in context: [0-9.]* ms' $D/$v-$i.out | grep -o '[0-9.]* ms')
    busy=$(grep -o 'busy core(s): [0-9.]* ms' $D/$v-$i.out | grep -o '[0-9.]* ms')
    med=$(python3 -c "import json,sys;print(json.load(open('$D/$v-$i.out'))['latency_ms']['median'])" 2>/dev/null)
    echo "$i $v 1-thread=${one:-} busy=${busy:-} run_median=${med:-} load=$(cut -d' ' -f1 /proc/loadavg)"
  done
done
