#!/bin/bash
# The generated PyTorch (lc plan, 2 worker threads) of every exported corpus model, run once and
# compared with PyTorch's own output for the same input. Usage: bench/codegen/check_pytorch.sh [CLEAVE]
set -u
C=$(realpath "${1:-build/cleave}")
M=${CLEAVE_MODELS_DIR:-$HOME/.cache/cleave/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
for onnx in "$M"/*.onnx; do
  m=$(basename "$onnx" .onnx)
  [ -f "$M/$m.torch_output.npy" ] || continue
  if ! "$C" codegen "$onnx" --lang pytorch --plan auto --strategy lc --costs static -o "py_$m" \
      > /dev/null 2> err.txt; then
    echo "$m: codegen failed: $(head -n 1 err.txt)"
    continue
  fi
  if ! /usr/bin/python3 "py_$m/run.py" --input "input=$M/$m.input.npy" --output-dir "out_$m" \
      > /dev/null 2> err.txt; then
    echo "$m: run failed: $(tail -n 1 err.txt)"
    continue
  fi
  /usr/bin/python3 -c "
import numpy as np
a = np.load('out_$m/output.npy'); t = np.load('$M/$m.torch_output.npy')
print('$m: max abs difference %.2e (largest |output| %.2f)' % (abs(a - t).max(), abs(t).max()))"
done
