"""Per-call overhead of cleave.InferenceSession.run against `cleave run`'s in-process latency.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py [--cleave build/cleave]
Runs each model at 1 thread: `cleave run --json` (median of its timed runs), and the same
model through the Python session (median of as many calls, timed with perf_counter around
`run`), in alternating rounds. Prints a Markdown table; the difference is what the Python
call adds (feed conversion, GIL release, output arrays)."""

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cleave

ROOT = Path(__file__).resolve().parents[2]


def tiny_model(folder):
    """y = relu(x @ w + b), x: [1, 8]: a call that does almost nothing."""
    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    b = numpy_helper.from_array(np.ones(4, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["p"]),
         helper.make_node("Relu", ["p"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=[w, b])
    path = Path(folder) / "tiny.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def cli_median_ms(binary, model, repeat):
    out = subprocess.run([binary, "run", model, "--threads", "1", "--warmup", "20", "--repeat",
                          str(repeat), "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def python_median_ms(model, repeat):
    options = cleave.SessionOptions()
    options.intra_op_num_threads = 1
    session = cleave.InferenceSession(model, options)
    arg = session.get_inputs()[0]
    feed = {arg.name: np.random.default_rng(0).standard_normal(arg.shape).astype(np.float32)}
    for _ in range(20):
        session.run(None, feed)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cleave", default=str(ROOT / "build" / "cleave"))
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        models = {"tiny (MatMul+Add+Relu, 1x8)": tiny_model(folder),
                  "inception_demo (47 nodes)": str(ROOT / "models" / "inception_demo.onnx")}
        print("| model | `cleave run` median ms | Python `run` median ms | overhead µs |")
        print("|---|---:|---:|---:|")
        for name, model in models.items():
            cli, py = [], []
            for _ in range(args.rounds):
                cli.append(cli_median_ms(args.cleave, model, args.repeat))
                py.append(python_median_ms(model, args.repeat))
            c, p = statistics.median(cli), statistics.median(py)
            print(f"| {name} | {c:.4f} | {p:.4f} | {(p - c) * 1e3:.1f} |")


if __name__ == "__main__":
    main()
