#!/bin/bash
# The command run on a lent machine (device tool): its CPU, `cleave info`, then speed.py.
# Usage there: bash bench/device/run.sh [speed.py flags...]; results land in $OUT.
set -uo pipefail
out=${OUT:-/tmp/cleave-device-out}
mkdir -p "$out" /tmp/cleave-bundle
tar -C /tmp/cleave-bundle -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=/tmp/cleave-bundle/lib
lscpu >"$out/lscpu.txt"
grep -E 'Model name|CPU family|^CPU\(s\)|Thread|Socket|L3' "$out/lscpu.txt"
grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_tile' "$out/lscpu.txt" | sort -u | tr '\n' ' '; echo
/tmp/cleave-bundle/cleave info | tee "$out/info.txt"
python3 -c 'import onnxruntime as o; print("onnxruntime", o.__version__, o.get_available_providers())'
PYTHONUNBUFFERED=1 timeout "${SPEED_TIMEOUT:-480}" python3 bench/device/speed.py \
  --cleave /tmp/cleave-bundle/cleave --skeletons .device/skeletons --out "$out" "$@" 2>&1 |
  tee "$out/speed.log"
