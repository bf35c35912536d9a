"""Small models for the Python tests, made with the onnx package, and the repository's paths."""

import os
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

SOURCE_DIR = pathlib.Path(os.environ.get("CLEAVE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
CORPUS_MODEL = SOURCE_DIR / "models" / "inception_demo.onnx"


def save(model: onnx.ModelProto, folder: pathlib.Path, name: str) -> str:
    onnx.checker.check_model(model)
    path = folder / name
    onnx.save(model, str(path))
    return str(path)


def batch_model() -> onnx.ModelProto:
    """y = relu(x @ w + b) with x of shape [batch, 8]: one symbolic dim."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["pre"], name="add"),
        helper.make_node("Relu", ["pre"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "batch_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        initializer=[w, b])
    return helper.make_model(graph, producer_name="cleave-tests",
                             opset_imports=[helper.make_opsetid("", 17)])


def batch_reference(x: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    return np.maximum(x @ w + b, 0)


def branchy_model(branches: int = 12, width: int = 64, rows=16) -> onnx.ModelProto:
    """Many independent branches (small MatMul, Tanh, Mul) summed: the graphs ONNX Runtime
    users report slow under ORT_PARALLEL."""
    rng = np.random.default_rng(5)
    nodes, inits, outs = [], [], []
    for i in range(branches):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((width, width)) / width).astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), f"s{i}"))
        nodes += [
            helper.make_node("MatMul", ["x", f"w{i}"], [f"m{i}"], name=f"matmul{i}"),
            helper.make_node("Tanh", [f"m{i}"], [f"t{i}"], name=f"tanh{i}"),
            helper.make_node("Mul", [f"t{i}", f"s{i}"], [f"o{i}"], name=f"mul{i}"),
        ]
        outs.append(f"o{i}")
    nodes.append(helper.make_node("Sum", outs, ["y"], name="sum"))
    graph = helper.make_graph(
        nodes, "branchy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])],
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def two_output_model() -> onnx.ModelProto:
    """a = x + y, b = x * y over int64 and float inputs of fixed shape [2, 3]."""
    nodes = [
        helper.make_node("Add", ["x", "y"], ["a"], name="add"),
        helper.make_node("Mul", ["x", "y"], ["b"], name="mul"),
        helper.make_node("Identity", ["n"], ["m"], name="copy"),
    ]
    graph = helper.make_graph(
        nodes, "two_outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("m", TensorProto.INT64, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def batch_path(tmp_path):
    return save(batch_model(), tmp_path, "batch.onnx")


@pytest.fixture
def branchy_path(tmp_path):
    return save(branchy_model(), tmp_path, "branchy.onnx")


@pytest.fixture
def two_output_path(tmp_path):
    return save(two_output_model(), tmp_path, "two_outputs.onnx")


@pytest.fixture
def fast_options():
    """Options that keep a test's preparation short: analytical costs, no timed auto check."""
    import cleave
    options = cleave.SessionOptions()
    options.intra_op_num_threads = 1
    options.add_session_config_entry("cleave.costs", "analytical")
    options.add_session_config_entry("cleave.auto_check", "0")
    return options
