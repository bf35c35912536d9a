#!/usr/bin/python3
"""Writes a large ONNX graph for the scaling benchmark: a chain of N Relu nodes, or a random DAG
of N Add nodes where node i reads node i-1 and one uniformly chosen earlier node (one output).

usage: make_graph.py chain|dag N out.onnx [seed]
"""
import random
import sys

import onnx
from onnx import TensorProto, helper


def main():
    kind, count, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    nodes = []
    values = ["x"]
    for i in range(count):
        out = f"v{i}"
        if kind == "chain" or i == 0:
            nodes.append(helper.make_node("Relu", [values[-1]], [out], name=f"n{i}"))
        else:
            other = values[rng.randrange(0, len(values) - 1)]
            nodes.append(helper.make_node("Add", [values[-1], other], [out], name=f"n{i}"))
        values.append(out)
    graph = helper.make_graph(
        nodes, f"{kind}{count}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(values[-1], TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


if __name__ == "__main__":
    main()
