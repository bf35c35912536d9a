#!/bin/bash
# On a lent machine: the pools of pool-heavy corpus models per op, under the AVX2 cap and the
# CPUID mask (counting its traps), for the packed cleave and optionally an older binary, to
# tell an AVX2 kernel's cost from the mask's and to compare two builds.
# Usage there: [OLD=path/to/old/cleave] bash bench/device/pool_probe.sh [models]
# (after pack.sh and avx2_cpuid.so here; an OLD binary must need the bundle's libraries only).
set -uo pipefail
out=${OUT:-/tmp/cleave-device-out}
models=${1:-googlenet,squeezenet1_0,inception_v3}
mkdir -p "$out" /tmp/cleave-bundle
tar -C /tmp/cleave-bundle -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=/tmp/cleave-bundle/lib
python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'bench/device'); import speed
speed.restore(Path('.device/skeletons'), Path('/tmp/cleave-corpus'), '$models'.split(','))"
mask=$PWD/.device/avx2_cpuid.so
builds=(new=/tmp/cleave-bundle/cleave)
[ -n "${OLD:-}" ] && builds=(old="$OLD" "${builds[@]}")
probe() {  # label model binary env...
  local label=$1 model=$2 binary=$3; shift 3
  local input
  input=$(python3 -c "import json; print(json.load(open('/tmp/cleave-corpus/restored.json'))['$model']['input'])")
  env "$@" timeout 120 "$binary" run "/tmp/cleave-corpus/$model.onnx" --input input="$input" \
    --threads 1 --fixed-threads --warmup 5 --repeat 30 --stats --json >"$out/probe.json" 2>"$out/err.txt"
  python3 -c "
import json; d=json.load(open('$out/probe.json')); ops={o['op']: o['ms_per_run'] for o in d['ops']}
pools=sorted({i['implementation'] for i in d['implementations'] if 'Pool' in i['op']})
print(f\"$model $label: median {d['latency_ms']['median']:.2f} ms, MaxPool {ops.get('MaxPool',0):.3f}, AveragePool {ops.get('AveragePool',0):.3f}, Conv {ops.get('Conv',0):.2f}, isa {d['isa']['effective']}, pools {pools}\")"
  grep -h avx2_cpuid "$out/err.txt"
}
for model in ${models//,/ }; do
  for build in "${builds[@]}"; do
    probe "${build%%=*} cap" "$model" "${build#*=}" ONEDNN_MAX_CPU_ISA=AVX2
    probe "${build%%=*} mask" "$model" "${build#*=}" LD_PRELOAD="$mask" ONEDNN_MAX_CPU_ISA=AVX2 AVX2_CPUID_COUNT=1
  done
done
rm -f "$out/probe.json" "$out/err.txt"
