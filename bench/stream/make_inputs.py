# Writes the ONNX models, npy inputs and program files the stream benchmarks run.
# Usage: /usr/bin/python3 bench/stream/make_inputs.py OUT_DIR
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def linear(path, rows, k, n, seed):
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32) / np.sqrt(k), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [node], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def dense(path, in_shape, n, out_shape, act, seed):
    rng = np.random.default_rng(seed)
    k = int(np.prod(in_shape))
    inits = [numpy_helper.from_array(np.array([1, k], np.int64), "s1"),
             numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32) / np.sqrt(k), "w"),
             numpy_helper.from_array(np.array(out_shape, np.int64), "s2")]
    nodes = [helper.make_node("Reshape", ["x", "s1"], ["r"]),
             helper.make_node("MatMul", ["r", "w"], ["m"]),
             helper.make_node(act, ["m"], ["a"]),
             helper.make_node("Reshape", ["a", "s2"], ["y"])]
    graph = helper.make_graph(
        nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    # Tables 5.1 / 5.2: Linear 1024x512 -> 1024x256 and 1024x4096 -> 1024x1024, rows as items.
    for k, n in ((512, 256), (4096, 1024)):
        linear(f"{out}/linear_{k}_{n}.onnx", 1024, k, n, k)
        np.save(f"{out}/rows_{k}.npy", rng.standard_normal((1024, k)).astype(np.float32))
        prog = {"filter": {"name": "lin", "pop": 1024, "push": 1024,
                           "model": f"linear_{k}_{n}.onnx"}}
        with open(f"{out}/linear_{k}_{n}.json", "w") as f:
            json.dump(prog, f)
    # The three-model audio pipeline: chunks of 4096 samples -> 4 frames of 256 ->
    # embeddings of 512 from windows of 8 frames (step 4) -> classes from 4 embeddings (step 2).
    dense(f"{out}/features.onnx", [1, 4096], 1024, [4, 256], "Relu", 1)
    dense(f"{out}/embed.onnx", [8, 256], 512, [1, 512], "Tanh", 2)
    dense(f"{out}/classify.onnx", [4, 512], 64, [1, 64], "Sigmoid", 3)
    np.save(f"{out}/chunks.npy", rng.standard_normal((64, 4096)).astype(np.float32))
    prog = {"pipeline": {"name": "audio", "streams": [
        {"filter": {"name": "features", "pop": 1, "push": 4, "model": "features.onnx"}},
        {"filter": {"name": "embed", "pop": 4, "peek": 8, "push": 1, "model": "embed.onnx"}},
        {"filter": {"name": "classify", "pop": 2, "peek": 4, "push": 1,
                    "model": "classify.onnx"}}]}}
    with open(f"{out}/audio.json", "w") as f:
        json.dump(prog, f)


main()
