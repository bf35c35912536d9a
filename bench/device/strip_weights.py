#!/usr/bin/python3
"""Shrinks the corpus to weightless skeletons that fit a lent machine's 64 MiB transfer.

Usage: /usr/bin/python3 bench/device/strip_weights.py CORPUS_DIR OUT_DIR

Every float initializer of more than 1,024 elements loses its data and keeps its shape; its mean
and standard deviation go to OUT_DIR/weights.json, and bench/device/speed.py refills it with
seeded normal values of the same mean and spread. Small initializers (batch-norm statistics,
biases, shape constants) keep their exact values, so refilled models compute finite numbers.
Latency depends on shapes, not on weight values, so the refilled model times like the original.
"""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

LARGE = 1024


def strip(model_path: Path, out_path: Path) -> dict:
    model = onnx.load(str(model_path))
    stats = {}
    for tensor in model.graph.initializer:
        if tensor.data_type != onnx.TensorProto.FLOAT:
            continue
        count = int(np.prod(tensor.dims)) if tensor.dims else 1
        if count <= LARGE:
            continue
        values = numpy_helper.to_array(tensor).astype(np.float64)
        stats[tensor.name] = {"mean": float(values.mean()), "std": float(values.std())}
        tensor.ClearField("raw_data")
        tensor.ClearField("float_data")
    onnx.save(model, str(out_path))
    return stats


def main() -> None:
    corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((corpus / "manifest.json").read_text())
    weights = {}
    for name, entry in manifest["models"].items():
        weights[name] = strip(corpus / entry["file"], out / entry["file"])
        print(f"{name}: {len(weights[name])} initializers stripped", file=sys.stderr)
    (out / "weights.json").write_text(json.dumps(weights))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
