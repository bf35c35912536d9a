#!/bin/bash
# On a lent machine: the corpus with both runtimes on their AVX2 paths (CPUID masked), then a
# per-operator profile of the named models; natively where the CPU lacks cpuid_fault.
# Usage there: bash bench/device/avx2_proxy.sh [profile models, or none] (needs .device from
# pack.sh and .device/avx2_cpuid.so built here); results land in $OUT.
set -uo pipefail
out=${OUT:-/tmp/cleave-device-out}
profile_models=${1:-googlenet,mobilenet_v2}
if grep -qw cpuid_fault /proc/cpuinfo; then
  export LD_PRELOAD=$PWD/.device/avx2_cpuid.so ONEDNN_MAX_CPU_ISA=AVX2
  echo "cpuid_fault: yes, both runtimes on AVX2"
else
  echo "cpuid_fault: no, both runtimes native"
fi
SPEED_TIMEOUT=${SPEED_TIMEOUT:-430} bash bench/device/run.sh --threads 1,2 --rounds 2
[ "$profile_models" = none ] && exit 0
LD_LIBRARY_PATH=/tmp/cleave-bundle/lib timeout "${PROFILE_TIMEOUT:-90}" python3 \
  bench/device/profile.py --cleave /tmp/cleave-bundle/cleave --work /tmp/cleave-corpus \
  --models "$profile_models" --threads 1 --runs 30 --out "$out" 2>&1 | tail -40
