"""Output arrays outlive their session; memory stays flat over many runs."""

import gc

import numpy as np

import cleave
from conftest import batch_reference


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_outputs_stay_valid_after_the_session_is_deleted(batch_path):
    session = cleave.InferenceSession(batch_path)
    x = np.random.default_rng(6).standard_normal((5, 8)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    del session
    gc.collect()
    # Allocations after the session's memory is gone would reuse it if y pointed there.
    scratch = [np.full((5, 4), -1.0, np.float32) for _ in range(100)]
    np.testing.assert_allclose(y, batch_reference(x), rtol=1e-5, atol=1e-5)
    assert len(scratch) == 100


def test_rss_does_not_grow_over_a_thousand_runs(batch_path):
    session = cleave.InferenceSession(batch_path)
    x = np.ones((256, 8), np.float32)  # a 4 KiB output
    for _ in range(100):  # warm up: buffers, pools, caches
        session.run(None, {"x": x})
    before = rss_bytes()
    for _ in range(1000):
        session.run(None, {"x": x})
    gc.collect()
    grown = rss_bytes() - before
    # A leaked output (4 KiB) per run would be 4 MiB.
    assert grown < 1024 * 1024, f"RSS grew by {grown} bytes over 1000 runs"
