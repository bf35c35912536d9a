#!/bin/bash
# On a lent many-core machine: auto's families (hybrid task plans, pure intra-op, task-parallel)
# and ONNX Runtime at the same core counts, for issue 46 item 6. See bench/device/README.md.
# Usage there: CORES="4 8 16" MODELS="googlenet inception_v3 rwnn" bash bench/device/hybrid.sh
# Needs .device/ from pack.sh (skeletons of the models named); results land in $OUT.
set -uo pipefail
out=${OUT:-/tmp/cleave-device-out}
cores=${CORES:-"4 8 16"}
models=${MODELS:-"googlenet inception_v3 rwnn"}
mkdir -p "$out" /tmp/cleave-bundle
tar -C /tmp/cleave-bundle -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=/tmp/cleave-bundle/lib
cleave=/tmp/cleave-bundle/cleave
lscpu >"$out/lscpu.txt"
grep -E 'Model name|CPU family|^Model:|^CPU\(s\)' "$out/lscpu.txt"
uptime
only=$(echo "$models" | tr ' ' ',')
threads=$(echo "$cores" | tr ' ' ',')
# ONNX Runtime (sequential, intra-op threads T) beside `cleave run --threads T`; also refills the
# skeletons' weights into /tmp/corpus, which the families runs below read.
PYTHONUNBUFFERED=1 timeout "${SPEED_TIMEOUT:-200}" python3 bench/device/speed.py \
  --cleave "$cleave" --skeletons .device/skeletons --work /tmp/corpus --out "$out" \
  --threads "$threads" --only "$only" --rounds "${ROUNDS:-3}" 2>&1 | tail -n 30
# DEADLINE (seconds since the start): later families runs are skipped, so the archive below is
# still written inside the device call's limit.
for n in $cores; do
  for m in $models; do
    if (( ${DEADLINE:-0} > 0 && SECONDS > ${DEADLINE:-0} )); then
      echo "skipped (DEADLINE): $m on $n cores"
      continue
    fi
    echo "== $m on $n cores: $(uptime)"
    timeout "${FAMILY_TIMEOUT:-90}" taskset -c "0-$((n - 1))" "$cleave" bench "/tmp/corpus/$m.onnx" \
      --families --workers "$n" --repeat 10 --warmup 3 --json >"$out/${m}_w$n.json" ||
      echo "failed: $m on $n cores"
  done
done
# The device tool brings back only a few files: one archive holds them all.
tar -C "$out" -czf /tmp/hybrid.tar.gz . && find "$out" -mindepth 1 -delete && mv /tmp/hybrid.tar.gz "$out/"
