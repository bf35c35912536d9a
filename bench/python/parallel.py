"""A highly parallel graph at 2 threads: cleave's ORT_PARALLEL against onnxruntime-node.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python/parallel.py
(needs bench/ort/node_modules: see bench/ort/README.md). The graph is the kind ONNX Runtime
users report slow since 1.14's ORT_PARALLEL stopped running branches in parallel: many
independent branches of a small MatMul and elementwise ops, summed. Each setting runs in its
own process (ONNX Runtime) or session (cleave), in alternating rounds; medians of the runs."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cleave

HERE = Path(__file__).resolve().parent
BRANCHES, ROWS, WIDTH = 24, 32, 128


def branchy(folder):
    rng = np.random.default_rng(5)
    nodes, inits, outs = [], [], []
    for i in range(BRANCHES):
        inits += [numpy_helper.from_array((rng.standard_normal((WIDTH, WIDTH)) / WIDTH).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(WIDTH).astype(np.float32), f"s{i}")]
        nodes += [helper.make_node("MatMul", ["x", f"w{i}"], [f"m{i}"]),
                  helper.make_node("Tanh", [f"m{i}"], [f"t{i}"]),
                  helper.make_node("Mul", [f"t{i}", f"s{i}"], [f"u{i}"]),
                  helper.make_node("Sigmoid", [f"u{i}"], [f"o{i}"])]
        outs.append(f"o{i}")
    nodes.append(helper.make_node("Sum", outs, ["y"]))
    graph = helper.make_graph(nodes, "branchy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, WIDTH])], initializer=inits)
    path = str(Path(folder) / "branchy.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def cleave_ms(model, parallel, runs):
    options = cleave.SessionOptions()
    if parallel:
        options.execution_mode = cleave.ExecutionMode.ORT_PARALLEL
        options.inter_op_num_threads = 2
        options.intra_op_num_threads = 1
    else:
        options.intra_op_num_threads = 2
    session = cleave.InferenceSession(model, options)
    feed = {"x": np.random.default_rng(0).uniform(-1, 1, (ROWS, WIDTH)).astype(np.float32)}
    for _ in range(20):
        session.run(None, feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), session.prepared()[0]["strategy"]


def ort_ms(model, mode, runs):
    intra, inter = ("2", "1") if mode == "sequential" else ("1", "2")
    out = subprocess.run(["node", str(HERE / "ort_parallel.mjs"), model, "x", f"{ROWS},{WIDTH}", mode, intra,
                          inter, "20", str(runs)], capture_output=True, text=True, check=True).stdout
    return statistics.median(json.loads(out)["runs"])


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as folder:
        model = branchy(folder)
        results = {k: [] for k in ("cleave ORT_PARALLEL (2 workers x 1)", "cleave sequential (2 threads)",
                                   "ORT sequential (intra 2)", "ORT parallel (inter 2, intra 1)")}
        strategy = ""
        for _ in range(3):
            ms, strategy = cleave_ms(model, True, runs)
            results["cleave ORT_PARALLEL (2 workers x 1)"].append(ms)
            results["cleave sequential (2 threads)"].append(cleave_ms(model, False, runs)[0])
            results["ORT sequential (intra 2)"].append(ort_ms(model, "sequential", runs))
            results["ORT parallel (inter 2, intra 1)"].append(ort_ms(model, "parallel", runs))
        print(f"graph: {BRANCHES} branches of MatMul {ROWS}x{WIDTH}x{WIDTH}, Tanh, Mul, Sigmoid; summed")
        print(f"cleave's ORT_PARALLEL plan: {strategy}\n")
        print("| setting | median ms |")
        print("|---|---:|")
        medians = {k: statistics.median(v) for k, v in results.items()}
        for k, v in medians.items():
            print(f"| {k} | {v:.3f} |")
        best_ort = min(medians["ORT sequential (intra 2)"], medians["ORT parallel (inter 2, intra 1)"])
        print(f"\nONNX Runtime's best / cleave ORT_PARALLEL: {best_ort / medians['cleave ORT_PARALLEL (2 workers x 1)']:.2f}")


if __name__ == "__main__":
    main()
