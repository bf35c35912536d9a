"""A script written for ONNX Runtime's API runs unchanged after `import cleave as onnxruntime`."""

import os
import subprocess
import sys

import numpy as np
import onnx

import cleave
from conftest import CORPUS_MODEL, batch_model, batch_reference, save

SCRIPT = os.path.join(os.path.dirname(__file__), "ort_script.py")


def run_script(model):
    result = subprocess.run([sys.executable, SCRIPT, model], capture_output=True, text=True,
                            timeout=300, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_script_runs_a_generated_model_with_a_symbolic_dim(batch_path):
    lines = run_script(batch_path)
    assert "input x tensor(float) ['batch', 8]" in lines
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    expected = float(np.sum(batch_reference(x), dtype=np.float64))
    output = [line for line in lines if line.startswith("output y ")]
    assert output and output[0].startswith("output y [2, 4] ")
    assert abs(float(output[0].split()[-1]) - expected) < 1e-3 * max(1.0, abs(expected))


def test_script_runs_the_corpus_model():
    lines = run_script(str(CORPUS_MODEL))
    assert "input input tensor(float) [1, 3, 32, 32]" in lines
    assert any(line.startswith("output ") for line in lines)


def test_session_interface_describes_the_model(batch_path):
    session = cleave.InferenceSession(batch_path)
    (x,) = session.get_inputs()
    (y,) = session.get_outputs()
    assert (x.name, x.shape, x.type) == ("x", ["batch", 8], "tensor(float)")
    assert (y.name, y.shape, y.type) == ("y", ["batch", 4], "tensor(float)")
    assert session.get_overridable_initializers() == []
    meta = session.get_modelmeta()
    assert (meta.graph_name, meta.producer_name) == ("batch_graph", "cleave-tests")
    assert session.get_provider_options() == {"CPUExecutionProvider": {}}


def test_model_metadata_is_what_the_file_says(tmp_path):
    model = batch_model()
    model.domain = "org.example"
    model.model_version = 7
    model.doc_string = "a batch model"
    model.graph.doc_string = "its graph"
    onnx.helper.set_model_props(model, {"author": "tests", "task": "demo"})
    meta = cleave.InferenceSession(save(model, tmp_path, "meta.onnx")).get_modelmeta()
    assert (meta.domain, meta.version) == ("org.example", 7)
    assert (meta.description, meta.graph_description) == ("a batch model", "its graph")
    assert meta.custom_metadata_map == {"author": "tests", "task": "demo"}


def test_model_bytes_load_like_a_path(batch_path):
    with open(batch_path, "rb") as f:
        session = cleave.InferenceSession(f.read())
    x = np.ones((3, 8), np.float32)
    (y,) = session.run(["y"], {"x": x})
    np.testing.assert_allclose(y, batch_reference(x), rtol=1e-5, atol=1e-5)
