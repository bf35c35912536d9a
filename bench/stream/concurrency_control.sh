#!/usr/bin/env bash
# Control for the pipelining CPU evidence: CPU ms per item of a corpus model as one stage alone,
# as two copies of that run at once (both cores busy with the same work, no pipelining), as 2
# stages on 1 worker (the cut alone) and as 2 stages on 2 workers (the pipeline).
# Usage: bench/stream/concurrency_control.sh [BUILD_DIR] [MODEL] [ROUNDS] [ITEMS]
BUILD=${1:-build}; MODEL=${2:-mobilenet_v2}; ROUNDS=${3:-3}; ITEMS=${4:-16}
M=${CLEAVE_MODELS:-$HOME/.cache/cleave/models}/$MODEL
run() {
  "$BUILD/cleave" stream run "$M.onnx" --input "input=$M.input.npy" --items "$ITEMS" --costs flops \
    --json "$@" | /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); \
c=j['worker_cpu_seconds']; print(round(sum(c)*1e3/$ITEMS,2), [round(x*1e3/$ITEMS,2) for x in c])"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r, load average $(cut -d' ' -f1 /proc/loadavg)"
  echo "  1 stage alone:          $(run --stages 1 --workers 1)"
  run --stages 1 --workers 1 >/tmp/cleave_control_a.$$ &
  b=$(run --stages 1 --workers 1); wait
  echo "  1 stage, two at once:   $(cat /tmp/cleave_control_a.$$) / $b"
  echo "  2 stages on 1 worker:   $(run --stages 2 --workers 1)"
  echo "  2 stages on 2 workers:  $(run --stages 2 --workers 2)"
done
rm -f /tmp/cleave_control_a.$$
