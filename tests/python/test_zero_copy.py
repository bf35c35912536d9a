"""NumPy inputs are read in place where dtype and strides allow; outputs keep cleave's buffers."""

import numpy as np

import cleave


def address(array):
    return array.__array_interface__["data"][0]


def test_a_contiguous_input_of_the_right_type_reaches_the_engine_in_place(two_output_path):
    session = cleave.InferenceSession(two_output_path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 3), np.float32)
    n = np.array([7, 9], np.int64)
    session.run(None, {"x": x, "y": y, "n": n})
    seen = session._core.last_input_addresses()
    assert seen == {"x": address(x), "y": address(y), "n": address(n)}


def test_a_non_contiguous_or_mistyped_input_is_copied_and_still_right(two_output_path):
    session = cleave.InferenceSession(two_output_path)
    x = np.arange(6, dtype=np.float32).reshape(3, 2).T  # Fortran order
    y = np.ones((2, 3), np.float64)  # float64 for a float input
    n = np.array([7, 9], np.int32)
    a, b, m = session.run(None, {"x": x, "y": y, "n": n})
    seen = session._core.last_input_addresses()
    assert seen["x"] != address(x) and seen["y"] != address(y) and seen["n"] != address(n)
    np.testing.assert_array_equal(a, x + 1)
    np.testing.assert_array_equal(b, x)
    np.testing.assert_array_equal(m, [7, 9])
    assert m.dtype == np.int64


def test_outputs_are_views_that_keep_the_engine_buffer_alive(two_output_path):
    session = cleave.InferenceSession(two_output_path)
    feed = {"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32),
            "n": np.array([1, 2], np.int64)}
    a, b, _ = session.run(["a", "b", "m"], feed)
    # Not a copy into NumPy's own memory: the array's base holds cleave's buffer.
    assert not a.flags.owndata and a.base is not None
    assert not b.flags.owndata and b.base is not None
