#!/bin/bash
# On a lent machine: per-operator profiles (profile.py) with both runtimes on AVX2 (CPUID mask
# and ONEDNN_MAX_CPU_ISA=AVX2), for models at 1 thread and models at 2.
# Usage there: bash bench/device/profile_avx2.sh MODELS_1T MODELS_2T (comma lists; after
# pack.sh and avx2_cpuid.so here); profiles land in $OUT/t1 and $OUT/t2.
set -uo pipefail
out=${OUT:-/tmp/cleave-device-out}
mkdir -p "$out" /tmp/cleave-bundle
tar -C /tmp/cleave-bundle -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=/tmp/cleave-bundle/lib
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'bench/device'); import speed
speed.restore(Path('.device/skeletons'), Path('/tmp/cleave-corpus'), '$1,$2'.split(','))"
grep -qw cpuid_fault /proc/cpuinfo || { echo "no cpuid_fault here: not both on AVX2"; exit 1; }
export LD_PRELOAD=$PWD/.device/avx2_cpuid.so ONEDNN_MAX_CPU_ISA=AVX2
for threads in 1 2; do
  models=$1
  [ "$threads" = 2 ] && models=$2
  timeout "${PROFILE_TIMEOUT:-120}" python3 bench/device/profile.py --cleave /tmp/cleave-bundle/cleave \
    --work /tmp/cleave-corpus --models "$models" --threads "$threads" --runs 20 --out "$out/t$threads" 2>&1
done
