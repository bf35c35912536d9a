"""One session run from two Python threads at once: the GIL is released during run, so the
threads' runs overlap, and every result is right."""

import threading
import time

import numpy as np

import cleave
from conftest import save, branchy_model


def test_two_threads_overlap_in_run_and_get_right_results(tmp_path):
    # Wide enough that one run takes milliseconds, so overlaps are not left to chance.
    path = save(branchy_model(branches=16, width=256), tmp_path, "wide.onnx")
    options = cleave.SessionOptions()
    options.intra_op_num_threads = 1
    session = cleave.InferenceSession(path, options)
    inputs = [np.random.default_rng(seed).standard_normal((16, 256)).astype(np.float32)
              for seed in (10, 11)]
    expected = [session.run(None, {"x": x})[0] for x in inputs]
    spans = [[], []]
    errors = []
    barrier = threading.Barrier(2)

    def worker(k):
        try:
            barrier.wait()
            for _ in range(20):
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
