#!/bin/bash
# MPI ranks beside 0, 1 and 2 busy processes (`yes`, unpinned): `mpirun -np 2 cleave run M
# --plan P --threads-per-worker T`, the default (the host's ranks share the free cores) against
# --fixed-threads, alternating, 3 rounds; prints the median ms and the threads rank 0 ran.
# Usage: bench/load/mpi_ranks.sh CLEAVE MODEL.onnx [T] [STRATEGY]
#   (the plan: CLEAVE plan MODEL --strategy STRATEGY --workers 2, default lc)
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,6p' "$0"; exit 2; }
cleave=$1 model=$2 threads=${3:-2} strategy=${4:-lc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lscpu | grep -E 'Model name|CPU family' | tr -s ' '
"$cleave" plan "$model" --strategy "$strategy" --workers 2 -o "$work/plan.json" >/dev/null
for busy in 0 1 2; do
  pids=()
  for _ in $(seq 1 "$busy"); do yes >/dev/null & pids+=($!); done
  sleep 1
  for round in 1 2 3; do
    for mode in default fixed; do
      flag=""
      [ "$mode" = fixed ] && flag=--fixed-threads
      env -u CLEAVE_FIXED_THREADS mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca btl tcp,self --mca btl_tcp_if_include lo "$cleave" run "$model" \
        --plan "$work/plan.json" --threads-per-worker "$threads" --warmup 3 --repeat 10 --json \
        $flag >"$work/run.json"
      /usr/bin/python3 -c "import json; d=json.load(open('$work/run.json'))
print('busy $busy round $round $mode', round(d['latency_ms']['median'], 2), d['threads_per_rank'])"
    done
  done
  for p in "${pids[@]}"; do kill "$p"; done
  wait 2>/dev/null || true
done
