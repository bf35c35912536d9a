"""ORT_PARALLEL runs a cleave plan over inter_op_num_threads workers; its outputs equal the
sequential run's."""

import numpy as np

import cleave


def parallel_options(strategy=None):
    options = cleave.SessionOptions()
    options.execution_mode = cleave.ExecutionMode.ORT_PARALLEL
    options.inter_op_num_threads = 2
    options.intra_op_num_threads = 1
    options.add_session_config_entry("cleave.costs", "static")
    if strategy:
        options.add_session_config_entry("cleave.strategy", strategy)
    return options


def sequential_outputs(path, x):
    options = cleave.SessionOptions()
    options.intra_op_num_threads = 1
    (y,) = cleave.InferenceSession(path, options).run(None, {"x": x})
    return y


def test_auto_parallel_equals_sequential_on_a_many_branch_graph(branchy_path):
    x = np.random.default_rng(2).standard_normal((16, 64)).astype(np.float32)
    session = cleave.InferenceSession(branchy_path, parallel_options())
    (y,) = session.run(None, {"x": x})
    np.testing.assert_allclose(y, sequential_outputs(branchy_path, x), rtol=1e-5, atol=1e-5)


def test_a_two_worker_plan_runs_and_equals_sequential(branchy_path):
    x = np.random.default_rng(4).standard_normal((16, 64)).astype(np.float32)
    session = cleave.InferenceSession(branchy_path, parallel_options("lc"))
    for _ in range(3):
        (y,) = session.run(None, {"x": x})
        np.testing.assert_allclose(y, sequential_outputs(branchy_path, x), rtol=1e-5, atol=1e-5)
    (prepared,) = session.prepared()
    assert prepared["strategy"] == "lc" and prepared["workers"] == 2
