#!/usr/bin/env bash
# Peak memory per rank, before and after ranks read only their own embedded weights and free
# each weight once their kernels packed it: a 2-rank run of each model under a cgroup cap.
#
#   bench/distributed/rank_memory.sh CLEAVE [--cap 2G] [--mlp-layers 8] [--mlp-width 4096] MODEL...
#
# Besides the MODELs given (corpus models keep their weights inside the protobuf), it writes
# an MLP of --mlp-layers Gemm layers of --mlp-width with its weights embedded
# (make_mlp.py --embedded; 8 x 4096: 512 MiB). Each model is planned as it is (--no-optimize,
# HEFT, static costs) for 2 ranks whose machine-file memory_bytes is 55% of the model file, so
# that its weights are spread over both, and run on 2 ranks of the emulated cluster, each rank
# in a memory cgroup of --cap (needs root), three ways:
#   whole+kept  every rank reads the whole model, keeps loaded weights (--read-whole-model
#               --keep-loaded-weights: the behaviour before this change)
#   own+kept    reads only its own weights, keeps them after packing (--keep-loaded-weights)
#   own+freed   the default: its own weights only, each freed once packed
# Prints one markdown row per model and way: weights read per rank, freed per rank, peak RSS per
# rank (MiB, getrusage), the exit status; and checks the three ways' outputs are bitwise equal.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cleave="$(readlink -f "${1:?usage: $0 CLEAVE [--cap 2G] [--mlp-layers L] [--mlp-width W] MODEL...}")"
shift
cap=2G layers=8 width=4096 models=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cap) cap="$2"; shift 2 ;;
    --mlp-layers) layers="$2"; shift 2 ;;
    --mlp-width) width="$2"; shift 2 ;;
    *) models+=("$(readlink -f "$1")"); shift ;;
  esac
done
work="$(mktemp -d /tmp/cleave_rank_memory.XXXXXX)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_mlp.py" "$work/mlp_embedded.onnx" --layers "$layers" \
  --width "$width" --embedded >&2
models+=("$work/mlp_embedded.onnx")

echo "| model | ranks read | weights read MiB (rank 0 / 1) | freed once packed MiB | peak RSS MiB (rank 0 / 1) | exit |"
echo "|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  name="$(basename "$model" .onnx)"
  /usr/bin/python3 - "$work/$name.cluster.json" "$(stat -c %s "$model")" <<'PY'
import json, sys
memory = 0.55 * int(sys.argv[2])
json.dump({"devices": [{"name": f"rank{r}", "memory_bytes": memory} for r in range(2)],
           "bandwidth": [[0, 1.25e9], [1.25e9, 0]]}, open(sys.argv[1], "w"))
PY
  "$cleave" plan "$model" --no-optimize --costs static --strategy heft \
    --machine "$work/$name.cluster.json" -o "$work/$name.plan.json" >/dev/null
  for way in whole+kept own+kept own+freed; do
    flags=()
    [[ "$way" == whole+* ]] && flags+=(--read-whole-model)
    [[ "$way" == *+kept ]] && flags+=(--keep-loaded-weights)
    status=0
    "$here/emulated_cluster.sh" --memory "$cap" -np 2 -- "$cleave" run "$model" --no-optimize \
      --plan "$work/$name.plan.json" --seed 1 --json --output-dir "$work/$name.$way" \
      "${flags[@]}" > "$work/$name.$way.json" 2> "$work/$name.$way.err" || status=$?
    if [[ $status -ne 0 ]]; then
      echo "| $name | $way | | | | $status ($(tail -c 200 "$work/$name.$way.err" | tr '\n|' '  ')) |"
      continue
    fi
    /usr/bin/python3 - "$work/$name.$way.json" "$name" "$way" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
mib = lambda key: " / ".join("%.1f" % (p[key] / 2**20) for p in r["per_rank"])
print(f"| {sys.argv[2]} | {sys.argv[3]} ({r['weights_read']}) | {mib('weight_bytes')} | "
      f"{mib('released_weight_bytes')} | {mib('peak_rss_bytes')} | 0 |")
PY
  done
  /usr/bin/python3 - "$work" "$name" <<'PY' >&2
import glob, os, sys
import numpy as np
work, name = sys.argv[1], sys.argv[2]
reference = os.path.join(work, name + ".own+freed")
for way in ("whole+kept", "own+kept"):
    for path in glob.glob(os.path.join(reference, "*.npy")):
        other = os.path.join(work, f"{name}.{way}", os.path.basename(path))
        if os.path.exists(other):
            same = np.array_equal(np.load(path), np.load(other))
            print(f"{name}: {way} output {os.path.basename(path)} bitwise equal to own+freed: {same}")
PY
done
