#!/usr/bin/env bash
# The StreamIt round trip on every corpus model: `codegen M --lang streamit -o S`, onnx.checker
# (full check) over S's per-filter models, then `codegen M --lang cpp --stream S/stream.cc`.
# Usage: scripts/streamit_round_trip.sh [model.onnx ...]
#   With no arguments: every model of the corpus (bench/models/export_corpus.py writes it to
#   ${CLEAVE_MODELS_DIR:-$HOME/.cache/cleave/models}) and models/*.onnx.
#   CLEAVE: the cleave binary (default build/cleave). CLEAVE_ROUND_TRIP_SECONDS (default 600)
#   and CLEAVE_ROUND_TRIP_MEMORY_MB (default 6144) bound each command. Prints one line per
#   model; exits 1 when any model fails.
set -uo pipefail
# A conversion that runs away must not take the host down with it.
ulimit -v $((${CLEAVE_ROUND_TRIP_MEMORY_MB:-6144} * 1024))
limit=(timeout "${CLEAVE_ROUND_TRIP_SECONDS:-600}")

root=$(cd "$(dirname "$0")/.." && pwd)
cleave=${CLEAVE:-$root/build/cleave}
corpus=${CLEAVE_MODELS_DIR:-$HOME/.cache/cleave/models}
if [ ! -x "$cleave" ]; then
  echo "streamit_round_trip: no cleave binary at $cleave (build it, or set CLEAVE)" >&2
  exit 2
fi
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  shopt -s nullglob
  models=("$root"/models/*.onnx "$corpus"/*.onnx)
fi
checker=0
if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then checker=1; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for model in "${models[@]}"; do
  name=$(basename "$model" .onnx)
  dir="$work/$name"
  mkdir -p "$dir"
  log="$dir/log"
  start=$(date +%s)
  status="ok"
  if ! "${limit[@]}" "$cleave" codegen "$model" --lang streamit -o "$dir/st" >"$log" 2>&1; then
    status="FAILED (codegen --lang streamit)"
  elif [ "$checker" = 1 ] && ! /usr/bin/python3 - "$dir"/st/*.onnx >>"$log" 2>&1 <<'PY'
import sys
import onnx
for path in sys.argv[1:]:
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception as e:
        print(f"{path}: {e}")
        sys.exit(1)
PY
  then
    status="FAILED (onnx.checker on a per-filter model)"
  elif ! "${limit[@]}" "$cleave" codegen "$model" --lang cpp --stream "$dir/st/stream.cc" -o "$dir/gen" \
      >>"$log" 2>&1; then
    status="FAILED (codegen --lang cpp --stream)"
  fi
  filters=$(find "$dir/st" -name '*.onnx' 2>/dev/null | wc -l)
  echo "$name: $status; $filters per-filter models; $(($(date +%s) - start)) s"
  if [ "$status" != "ok" ]; then
    failed=1
    tail -n 3 "$log" | sed 's/^/    /'
  fi
done
if [ "$checker" = 0 ]; then
  echo "streamit_round_trip: /usr/bin/python3 has no onnx module: per-filter models not checked"
fi
exit $failed
