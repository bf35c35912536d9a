#!/usr/bin/env bash
# Two cleave builds timed interleaved on the same models: median latency of each build per
# model, thread count and round, the builds alternating within every round.
#
# Usage: bench/kernels/ab_builds.sh OLD_CLEAVE NEW_CLEAVE [--threads "1 2"] [--rounds 3]
#          [--repeat 20] model.onnx...
# The environment passes through (ONEDNN_MAX_CPU_ISA=AVX2 times the AVX2 paths). Each run is
# `cleave run --fixed-threads --warmup 3 --repeat N`; lscpu's model and family go first.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,8p' "$0"; exit 2; }
old=$1 new=$2
shift 2
threads="1 2" rounds=3 repeat=20
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "no model given" >&2; exit 2; }
lscpu | grep -E 'Model name|CPU family' | tr -s ' '
echo "ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-native}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
median() {
  "$1" run "$2" --threads "$3" --fixed-threads --warmup 3 --repeat "$repeat" 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}
printf '%-40s %7s %5s %10s %10s\n' model threads round old_ms new_ms
for model in "$@"; do
  for t in $threads; do
    for ((r = 1; r <= rounds; ++r)); do
      a=$(median "$old" "$model" "$t")
      b=$(median "$new" "$model" "$t")
      printf '%-40s %7s %5s %10s %10s\n' "$(basename "$model" .onnx)" "$t" "$r" "${a:-failed}" "${b:-failed}"
    done
  done
done
