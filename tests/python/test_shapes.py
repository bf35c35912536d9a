"""Shapes as ONNX Runtime takes them: symbolic dims fixed per run, prepared once per shape."""

import json

import numpy as np
import pytest

import cleave
from conftest import batch_reference


def test_batch_one_then_four_then_one_prepares_two_shapes(batch_path, fast_options):
    session = cleave.InferenceSession(batch_path, fast_options)
    rng = np.random.default_rng(1)
    for batch in (1, 4, 1):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        (y,) = session.run(None, {"x": x})
        assert y.shape == (batch, 4)
        np.testing.assert_allclose(y, batch_reference(x), rtol=1e-5, atol=1e-5)
    assert [p["shapes"] for p in session.prepared()] == ["x=[1,8]", "x=[4,8]"]


def test_profile_says_which_shapes_were_prepared(batch_path, fast_options, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fast_options.enable_profiling = True
    session = cleave.InferenceSession(batch_path, fast_options)
    for batch in (1, 4, 1):
        session.run(None, {"x": np.zeros((batch, 8), np.float32)})
    path = session.end_profiling()
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    prepares = [e["args"]["shapes"] for e in events if e.get("name") == "session_prepare"]
    assert prepares == ["x=[1,8]", "x=[4,8]"]
    assert len([e for e in events if e.get("name") == "model_run"]) == 3


def test_a_dim_contradicting_the_model_is_refused_naming_the_input(batch_path):
    session = cleave.InferenceSession(batch_path)
    with pytest.raises(cleave.Error, match="input 'x' dim 1 is fixed to 8 by the model"):
        session.run(None, {"x": np.zeros((2, 5), np.float32)})


def test_the_cache_of_prepared_shapes_is_bounded(batch_path, fast_options):
    fast_options.add_session_config_entry("cleave.max_prepared_shapes", "2")
    session = cleave.InferenceSession(batch_path, fast_options)
    for batch in (1, 2, 3, 1):
        (y,) = session.run(None, {"x": np.ones((batch, 8), np.float32)})
        assert y.shape == (batch, 4)
    # 1 was dropped when 3 came, so it was prepared again.
    assert [p["shapes"] for p in session.prepared()] == ["x=[1,8]", "x=[2,8]", "x=[3,8]", "x=[1,8]"]
