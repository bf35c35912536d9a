#!/usr/bin/env bash
# Run before claiming a speed change: correctness and per-model latency ratios against ONNX
# Runtime over the whole corpus, plus the guard models (a QDQ CNN, a detector with NMS, a
# decoder with symbolic dims). Exits 1 when an output differs, or when a model's paired ratio
# cleave/ORT at 1 or 2 threads is above the limit (GUARD_MAX_RATIO, default 1.05: the noise of
# an interleaved run on a quiet 2-core machine).
#
# usage: bench/ort/guard.sh [--cleave build/cleave] [--models DIR] [--only a,b] [--rounds N]
# Needs: `cd bench/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install` once, and the corpus
# (bench/models/export_corpus.py). Measure on an otherwise idle machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cleave="$root/build/cleave"
pass=()
rounds=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cleave) cleave="$(realpath "$2")"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --models|--only) pass+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "guard.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
limit="${GUARD_MAX_RATIO:-1.05}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0

echo "== guard models against ONNX Runtime's committed outputs"
for model in "$root"/tests/guard/*.onnx; do
  name="$(basename "$model" .onnx)"
  inputs=()
  "$cleave" inspect "$model" --json >"$work/$name.json"
  mapfile -t names < <(/usr/bin/python3 -c \
    'import json,sys; print("\n".join(i["name"] for i in json.load(open(sys.argv[1]))["inputs"]))' \
    "$work/$name.json")
  for k in "${!names[@]}"; do inputs+=(--input "${names[$k]}=$root/tests/guard/$name.input_$k.npy"); done
  "$cleave" run "$model" "${inputs[@]}" --output-dir "$work/$name" >/dev/null
  /usr/bin/python3 - "$work/$name" "$root/tests/guard/$name" "$work/$name.json" <<'PY' || failed=1
import json, os, sys
import numpy as np
ours, prefix, info = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
ok = True
for k, output in enumerate(info["outputs"]):
    mine = np.load(os.path.join(ours, output["name"] + ".npy"))
    theirs = np.load(f"{prefix}.ort_output_{k}.npy")
    good = mine.shape == theirs.shape and bool(np.all(
        np.abs(mine - theirs) <= 1e-3 * np.abs(theirs) + 1e-4 * np.max(np.abs(theirs), initial=0)))
    ok &= good
    print(f"  {os.path.basename(prefix)} {output['name']}: {'match' if good else 'DIFFERS'}")
sys.exit(0 if ok else 1)
PY
done

echo "== corpus outputs (compare.mjs)"
(cd "$here" && node compare.mjs --cleave "$cleave" "${pass[@]}") || failed=1

echo "== corpus latency (speed.mjs, $rounds rounds)"
(cd "$here" && node speed.mjs --cleave "$cleave" --rounds "$rounds" --json "$work/speed.json" "${pass[@]}")
/usr/bin/python3 - "$work/speed.json" "$limit" <<'PY' || failed=1
import json, sys
report = json.load(open(sys.argv[1]))
limit = float(sys.argv[2])
slow = []
print(f"{'model':28} {'paired 1T':>10} {'paired 2T':>10}")
for r in report["results"]:
    flag = "  <- above %.2f" % limit if max(r["paired_1"], r["paired_2"]) > limit else ""
    print(f"{r['name']:28} {r['paired_1']:10.3f} {r['paired_2']:10.3f}{flag}")
    if flag:
        slow.append(r["name"])
s = report["summary"]
print(f"geometric mean {s['geomean_ratio_1']:.3f} (1T) {s['geomean_ratio_2']:.3f} (2T)")
if slow:
    print("slower than ONNX Runtime beyond the limit: " + ", ".join(slow))
sys.exit(1 if slow else 0)
PY
exit "$failed"
