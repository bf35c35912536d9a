"""run releases the GIL, and one session may be run from two Python threads at once."""

import threading
import time

import numpy as np

import cleave
from conftest import branchy_model, save


def heavy_session(tmp_path):
    # A symbolic row count: each thread can run its own prepared shape.
    path = save(branchy_model(branches=16, width=256, rows="rows"), tmp_path, "heavy.onnx")
    options = cleave.SessionOptions()
    options.intra_op_num_threads = 1
    return cleave.InferenceSession(path, options)


def test_python_code_runs_while_a_run_is_under_way(tmp_path):
    session = heavy_session(tmp_path)
    x = np.ones((512, 256), np.float32)
    session.run(None, {"x": x})  # prepared outside the timed runs
    spans = []

    def runner():
        for _ in range(3):
            start = time.perf_counter()
            session.run(None, {"x": x})
            spans.append((start, time.perf_counter()))

    thread = threading.Thread(target=runner)
    ticks = []
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
    thread.join()
    ticks = np.array(ticks)
    gaps = []
    for start, end in spans:
        inside = ticks[(ticks > start) & (ticks < end)]
        edges = np.concatenate(([start], inside, [end]))
        gaps.append((np.max(np.diff(edges)), end - start))
    # Holding the GIL through a run would stop this thread for all of it, in every run; on a
    # busy host the scheduler alone may stop it for a while in some.
    assert any(gap < 0.5 * span for gap, span in gaps), gaps


def test_two_threads_run_one_session_at_once_with_right_results(tmp_path):
    session = heavy_session(tmp_path)
    inputs = [np.random.default_rng(seed).standard_normal((rows, 256)).astype(np.float32)
              for seed, rows in ((10, 64), (11, 96))]
    expected = [session.run(None, {"x": x})[0] for x in inputs]
    spans = [[], []]
    errors = []
    barrier = threading.Barrier(2)

    def worker(k):
        try:
            barrier.wait()
            for _ in range(10):
                start = time.perf_counter()
                (y,) = session.run(None, {"x": inputs[k]})
                spans[k].append((start, time.perf_counter()))
                np.testing.assert_array_equal(y, expected[k])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    overlapping = sum(1 for a0, a1 in spans[0] for b0, b1 in spans[1] if a0 < b1 and b0 < a1)
    assert overlapping > 0
