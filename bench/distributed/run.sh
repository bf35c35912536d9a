#!/usr/bin/env bash
# Distributed benchmark: one model, single process at 1 and 2 threads against 2 MPI ranks of
# 1 thread (lc and HEFT plans), unshaped and on the emulated cluster shaped to 10 and 1 Gbit/s,
# and a pipelined stream. Prints markdown rows; the medians come from each run's --json.
#   bench/distributed/run.sh CLEAVE MODEL [REPEAT]
set -euo pipefail
cleave="$1" model="$2" repeat="${3:-5}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
median() { /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.2f' % r['latency_ms']['median'])" "$1"; }
field() { /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self --mca btl_tcp_if_include lo -x OMP_NUM_THREADS=1)
name="$(basename "$model" .onnx)"
for strategy in lc heft; do
  "$cleave" plan "$model" --strategy "$strategy" --workers 2 --costs static -o "$work/$strategy.json" >/dev/null
done
common=(--layouts blocked --warmup 2 --repeat "$repeat" --json)
"$cleave" run "$model" --threads 1 "${common[@]}" > "$work/t1.json"
"$cleave" run "$model" --threads 2 "${common[@]}" > "$work/t2.json"
echo "| $name | 1 process, 1 thread | $(median "$work/t1.json") | | |"
echo "| $name | 1 process, 2 threads | $(median "$work/t2.json") | | |"
for strategy in lc heft; do
  "${mpi[@]}" "$cleave" run "$model" --plan "$work/$strategy.json" "${common[@]}" > "$work/r.json"
  echo "| $name | 2 ranks, $strategy, loopback (predicted $(field "$work/r.json" "'%.2f' % r['plan']['predicted_ms']") ms) | $(median "$work/r.json") | $(field "$work/r.json" "' / '.join('%.2f' % (p['bytes_sent']/1048576) for p in r['per_rank'])") | $(field "$work/r.json" "' / '.join('%.0f' % (p['peak_rss_bytes']/1048576) for p in r['per_rank'])") |"
  for rate in 10gbit 1gbit; do
    "$here/emulated_cluster.sh" --rate "$rate" -np 2 -- "$cleave" run "$model" --plan "$work/$strategy.json" "${common[@]}" > "$work/r.json"
    echo "| $name | 2 ranks, $strategy, tbf $rate | $(median "$work/r.json") | | |"
  done
done
"$here/emulated_cluster.sh" --quota 100,50 -np 2 -- "$cleave" run "$model" --plan "$work/lc.json" "${common[@]}" > "$work/r.json"
echo "| $name | 2 ranks, lc, rank 1 at 50% CPU | $(median "$work/r.json") | | |"
"${mpi[@]}" "$cleave" run "$model" --plan "$work/lc.json" --layouts blocked --warmup 1 --repeat 3 --samples 8 --json > "$work/s.json"
echo "| $name | 2 ranks, lc, stream of 8 | $(median "$work/s.json") per 8 = $(field "$work/s.json" "'%.1f samples/s, per-sample median %.2f ms' % (r['throughput_samples_per_s'], r['sample_latency_ms']['median'])") | | |"
"$cleave" run "$model" --threads 1 --layouts blocked --warmup 1 --repeat 3 --json > "$work/s1.json"
echo "| $name | 1 process, 1 thread, for the stream | $(field "$work/s1.json" "'%.1f samples/s' % (1000 / r['latency_ms']['median'])") | | |"
