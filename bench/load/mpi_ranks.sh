#!/bin/bash
# MPI ranks beside 0, 1 and 2 busy processes (`yes`, unpinned): `mpirun -np 2 cleave run M
# --plan P --threads-per-worker T`, the default (the host's ranks share the free cores) against
# --fixed-threads, alternating, 3 rounds; prints the median ms and the threads rank 0 ran.
# Usage: bench/load/mpi_ranks.sh CLEAVE MODEL.onnx [T] [STRATEGY]
#   (the plan: CLEAVE plan MODEL --strategy STRATEGY --workers 2, default lc)
set -euo pipefail
source "$(dirname "$0")/busy.sh"
[ $# -ge 2 ] || { sed -n '2,6p' "$0"; exit 2; }
cleave=$1 model=$2 threads=${3:-2} strategy=${4:-lc}
work=$(mktemp -d)
trap 'rm -rf "$work"; stop_busy' EXIT
lscpu | grep -E 'Model name|CPU family' | tr -s ' '
"$cleave" plan "$model" --strategy "$strategy" --workers 2 -o "$work/plan.json" >/dev/null
measure() {
  env -u CLEAVE_FIXED_THREADS mpirun --allow-run-as-root --oversubscribe -np 2 \
    --mca btl tcp,self --mca btl_tcp_if_include lo "$cleave" run "$model" \
    --plan "$work/plan.json" --threads-per-worker "$threads" --warmup 3 --repeat 10 --json \
    $4 >"$work/run.json"
  /usr/bin/python3 -c "import json; d=json.load(open('$work/run.json'))
print('busy $1 round $2 $3', round(d['latency_ms']['median'], 2), d['threads_per_rank'])"
}
alternate_under_load measure
