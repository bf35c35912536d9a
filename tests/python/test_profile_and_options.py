"""enable_profiling, optimized_model_filepath, graph_optimization_level and log levels."""

import json
import os

import numpy as np
import onnx

import cleave
from conftest import batch_reference


def test_end_profiling_writes_a_chrome_trace_of_the_runs(batch_path, fast_options, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fast_options.enable_profiling = True
    fast_options.profile_file_prefix = "mine"
    session = cleave.InferenceSession(batch_path, fast_options)
    session.run(None, {"x": np.ones((2, 8), np.float32)})
    path = session.end_profiling()
    assert os.path.basename(path).startswith("mine_") and path.endswith(".json")
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X"]
    names = {e["name"] for e in slices}
    # The session's own rows, then the run's nodes on the executor's row.
    assert {"session_prepare", "model_run"} <= names
    assert any(name.startswith("matmul") for name in names), names
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)


def test_end_profiling_without_profiling_returns_nothing(batch_path):
    assert cleave.InferenceSession(batch_path).end_profiling() == ""


def test_optimized_model_filepath_writes_a_standard_model(batch_path, tmp_path):
    options = cleave.SessionOptions()
    target = tmp_path / "optimized.onnx"
    options.optimized_model_filepath = str(target)
    cleave.InferenceSession(batch_path, options)
    model = onnx.load(str(target))
    onnx.checker.check_model(model)
    # The symbolic batch dim survives; the written model runs and gives the same outputs.
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    x = np.ones((3, 8), np.float32)
    (y,) = cleave.InferenceSession(str(target)).run(None, {"x": x})
    np.testing.assert_allclose(y, batch_reference(x), rtol=1e-5, atol=1e-5)


def test_disable_all_runs_the_model_as_written(batch_path, fast_options):
    fast_options.graph_optimization_level = cleave.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = cleave.InferenceSession(batch_path, fast_options)
    x = np.random.default_rng(8).standard_normal((2, 8)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    np.testing.assert_allclose(y, batch_reference(x), rtol=1e-5, atol=1e-5)


def test_verbose_logging_prints_the_preparation(batch_path, capfd):
    options = cleave.SessionOptions()
    options.log_severity_level = 0
    cleave.InferenceSession(batch_path, options).run(None, {"x": np.ones((1, 8), np.float32)})
    assert "cleave: " in capfd.readouterr().err
