"""Tests of scripts/quantize_ties.py: the float-region walk and the tie-avoiding scale search."""
# Runs on the graph quantize_model.py's quantize() sees: float tensors, some of them quantized
# activations (their readers get DequantizeLinear outputs), so `Relu(a + b)` with a, b and the
# Relu's output quantized is DQ(a) + DQ(b) -> Relu -> Q. Needs no cleave binary.
import os
import sys

import numpy as np
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import quantize_model  # noqa: E402
import quantize_ties  # noqa: E402

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def graph(nodes, initializers=()):
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 8])
    return helper.make_graph(nodes, "g", [value("a"), value("b")], [value("out")],
                             initializer=list(initializers))


def residual_add():
    """Relu(a + b) with a, b at scale 2**-4 around zero point 128, the output at 2**-3.

    Power-of-two scales make every dequantized value, sum and quotient exact, so an odd
    (qa - 128) + (qb - 128) puts y / s + 0 exactly on k + 0.5: the calibrated scale reaches ties.
    """
    g = graph([helper.make_node("Add", ["a", "b"], ["sum"]),
               helper.make_node("Relu", ["sum"], ["out"])])
    ranges = {"a": [-8.0, 7.9375], "b": [-8.0, 7.9375], "out": [0.0, 255 * 0.125]}
    parameters = {"a": (np.float32(2 ** -4), np.uint8(128)), "b": (np.float32(2 ** -4), np.uint8(128)),
                  "out": quantize_model.activation_parameters(*ranges["out"])}
    return g, ranges, parameters


def test_residual_add_moves_off_ties():
    g, ranges, parameters = residual_add()
    check(parameters["out"] == (np.float32(0.125), 0), f"calibrated output parameters {parameters['out']}")
    found = quantize_ties.region(g, "out", {"a", "b", "out"}, {})
    check(found is not None, "Relu(a + b) is a float region")
    if found is None:
        return
    nodes, leaves = found
    check([n.op_type for n in nodes] == ["Add", "Relu"], f"region nodes {[n.op_type for n in nodes]}")
    check(leaves == ["a", "b"], f"region leaves {leaves}")
    values, terms = quantize_ties.reachable(nodes, leaves, parameters, {})
    # (qa - 128 + qb - 128) / 16 for qa, qb in 0..255: -16 .. 15.875 in steps of 1/16, Relu'd.
    check(len(values) == 255, f"{len(values)} reachable values, expected 255")
    # ONNX Runtime's QLinearAdd terms: max(q, 128) / 16 is at least 8 for every pair.
    check(terms.shape == values.shape and np.all(terms >= np.maximum(values, 8.0)),
          "terms below the operands' magnitudes")
    scale, zero = parameters["out"]
    before = quantize_ties.near_ties(values, scale, zero, terms)
    check(before > 0, f"near ties at the calibrated scale: {before}, expected some")
    regions, adjusted, total_before, total_after = quantize_ties.adjust_scales(
        g, ["a", "b", "out"], parameters, ranges)
    new_scale, new_zero = parameters["out"]
    after = quantize_ties.near_ties(values, new_scale, new_zero, terms)
    check(before == total_before, f"adjust_scales counted {total_before} before, expected {before}")
    check(after == 0 and total_after == 0, f"near ties after: {after} (adjust_scales: {total_after})")
    check(regions == 1 and adjusted == 1, f"{regions} regions, {adjusted} adjusted; expected 1, 1")
    check(scale < new_scale <= np.float32(1.01 * scale), f"scale {new_scale} not in (s, 1.01 s]")
    check(new_zero == 0, f"zero point {new_zero}, expected 0 (the range starts at 0)")
    check(parameters["a"] == (np.float32(2 ** -4), 128), "a leaf's parameters changed")


def test_search_keeps_a_tie_free_scale():
    values = np.array([0.0, 1.0, 2.0])  # y / 1 + 0 is an integer: no ties at s
    scale, zero, count = quantize_ties.search_scale(values, np.float32(1.0), 0.0)
    check((scale, zero, count) == (1.0, 0, 0), f"search moved a tie-free scale: {scale, zero, count}")


def test_clipped_ties_do_not_count():
    # 255.5 and -0.5 clip to 255 and 0 whichever way they round.
    check(quantize_ties.near_ties(np.array([255.5, -0.5]), np.float32(1.0), 0) == 0,
          "ties outside 0..255 were counted")
    check(quantize_ties.near_ties(np.array([254.5, 0.5]), np.float32(1.0), 0) == 2,
          "ties inside 0..255 were not counted")


def test_margin_follows_the_largest_term():
    # r3d_18_int8's case: 2.4999959 quanta summed from terms of 206.7 quanta is 4.1e-6 from a
    # tie, 4 ulps of 206.7 (6.1e-5) but not 4 ulps of 2.5 (9.5e-7).
    value = np.array([2.4999959])
    check(quantize_ties.near_ties(value, np.float32(1.0), 0) == 0, "a lone 2.4999959 was counted")
    check(quantize_ties.near_ties(value, np.float32(1.0), 0, np.array([206.7])) == 1,
          "2.4999959 from terms of 206.7 was not counted")


def test_region_with_a_conv_is_left_alone():
    weights = numpy_helper.from_array(np.ones((8, 8, 1, 1), np.float32), "w")
    g = graph([helper.make_node("Conv", ["a", "w"], ["conv"]),
               helper.make_node("Add", ["conv", "b"], ["sum"]),
               helper.make_node("Relu", ["sum"], ["out"])], [weights])
    _, ranges, parameters = residual_add()
    check(quantize_ties.region(g, "out", {"a", "b", "out"}, {}) is None,
          "a region reading a Conv output was walked")
    calibrated = dict(parameters)
    regions, adjusted, _, _ = quantize_ties.adjust_scales(g, ["a", "b", "out"], parameters, ranges)
    check(regions == 0 and adjusted == 0, f"{regions} regions, {adjusted} adjusted; expected 0, 0")
    check(parameters == calibrated, "parameters changed for a region with a Conv")


def test_region_limits():
    three = graph([helper.make_node("Add", ["a", "b"], ["ab"]),
                   helper.make_node("Add", ["ab", "c"], ["out"])])
    check(quantize_ties.region(three, "out", {"a", "b", "c", "out"}, {}) is None,
          "a region of three quantized leaves was walked")
    half = numpy_helper.from_array(np.full((1, 8), 0.5, np.float32), "half")
    mixed = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(1, 8), "mixed")
    scaled = graph([helper.make_node("Mul", ["a", "half"], ["out"])], [half, mixed])
    constants = quantize_ties.scalar_constants(scaled)
    check(constants == {"half": 0.5}, f"scalar constants {constants}")
    check(quantize_ties.region(scaled, "out", {"a", "out"}, constants) is not None,
          "a region with an all-equal constant was not walked")
    varied = graph([helper.make_node("Mul", ["a", "mixed"], ["out"])], [mixed])
    check(quantize_ties.region(varied, "out", {"a", "out"}, constants) is None,
          "a region with a varying constant was walked")


for test in (test_residual_add_moves_off_ties, test_search_keeps_a_tie_free_scale,
             test_clipped_ties_do_not_count, test_margin_follows_the_largest_term,
             test_region_with_a_conv_is_left_alone,
             test_region_limits):
    test()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("quantize_ties: all checks passed")
