#!/usr/bin/env bash
# Memory-capped ranks: a Gemm stack larger than any one rank's memory cap runs across several.
#
#   bench/distributed/memory_capped.sh CLEAVE [--layers 8] [--width 4096] [-np 4] [--cap 384M]
#
# Writes the model (weights in an external data file; --layers 8 --width 4096: 512 MiB), plans
# it with `cleave plan --machine` for -np ranks whose memory_bytes is half of the cap less
# 100 MiB (runtime, activations, one read piece; weights are held twice while running: as
# loaded and as the kernels' packed copy), runs it on the emulated cluster with each rank in a
# cgroup of --cap (emulated_cluster.sh --memory; needs root), then the same model in one process
# under the same cap (expected to fail: it does not fit) and without a cap (the reference), and
# compares the outputs. Prints each run's JSON report; removes its files at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cleave="$(readlink -f "${1:?usage: $0 CLEAVE [--layers L] [--width W] [-np N] [--cap 384M]}")"
shift
layers=8 width=4096 ranks=4 cap=384M
while [[ $# -gt 0 ]]; do
  case "$1" in
    --layers) layers="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    -np) ranks="$2"; shift 2 ;;
    --cap) cap="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
cap_bytes=$(numfmt --from=iec "$cap")
work="$(mktemp -d /tmp/cleave_capped.XXXXXX)"
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$here/make_mlp.py" "$work/big.onnx" --layers "$layers" --width "$width"
/usr/bin/python3 - "$work/cluster.json" "$ranks" "$cap_bytes" <<'EOF'
import json, sys
path, ranks, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# Weights are held twice while running (the loaded bytes, the kernels' packed copy).
memory = (cap - 100 * 2**20) // 2
json.dump({"devices": [{"name": f"rank{r}", "memory_bytes": memory} for r in range(ranks)],
           "bandwidth": [[0 if r == c else 1.25e9 for c in range(ranks)] for r in range(ranks)]},
          open(path, "w"))
EOF
"$cleave" plan "$work/big.onnx" --no-optimize --costs static --strategy heft \
  --machine "$work/cluster.json" -o "$work/plan.json"

echo "== $ranks ranks, each capped at $cap"
"$here/emulated_cluster.sh" --memory "$cap" -np "$ranks" -- \
  "$cleave" run "$work/big.onnx" --no-optimize --plan "$work/plan.json" --seed 5 --json \
  --output-dir "$work/ranks" | tee "$work/ranks.json"

echo "== 1 process capped at $cap (does not fit: expected to fail)"
single_capped=0
"$here/emulated_cluster.sh" --memory "$cap" -np 1 -- \
  "$cleave" run "$work/big.onnx" --no-optimize --seed 5 --json >/dev/null 2>&1 || single_capped=$?
echo "exit status $single_capped"

echo "== 1 process, no cap (reference)"
"$cleave" run "$work/big.onnx" --no-optimize --seed 5 --json --output-dir "$work/single" \
  | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print("peak RSS MiB", r["peak_rss_bytes"]/2**20, "median ms", r["latency_ms"]["median"] if "latency_ms" in r else r)'

/usr/bin/python3 - "$work" <<'EOF'
import glob, json, os, sys
import numpy as np
work = sys.argv[1]
report = json.load(open(os.path.join(work, "ranks.json")))
for rank in report["per_rank"]:
    print(f"rank {rank['rank']}: weights {rank['weight_bytes'] / 2**20:.1f} MiB, "
          f"peak RSS {rank['peak_rss_bytes'] / 2**20:.1f} MiB, sent {rank['bytes_sent']} B")
print(f"model weights {report['model_weight_bytes'] / 2**20:.1f} MiB, ranks read "
      f"{report['weights_read']}, median {report['latency_ms']['median']:.1f} ms")
worst = 0.0
for single in glob.glob(os.path.join(work, "single", "*.npy")):
    ranks = os.path.join(work, "ranks", os.path.basename(single))
    a, b = np.load(single), np.load(ranks)
    worst = max(worst, float(np.max(np.abs(a - b))))
    print(f"{os.path.basename(single)}: max |single - ranks| = {worst:g}, bitwise equal: "
          f"{np.array_equal(a, b)}")
EOF
