"""Activation scales that keep every value a float region can reach away from rounding ties."""
import math

import numpy as np
from onnx import helper, numpy_helper

# Ops that map elements to elements, so that a region of them has a finite set of values when
# its inputs are quantized. Ops outside this set (Conv, pooling, Resize, ...) end a region.
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Clip",
               "LeakyRelu", "Tanh", "Identity"}
MAX_LEAVES = 2  # 256 ** 2 = 65,536 combinations; three leaves would be 16.7 million.
STEPS = 400     # candidate scales in [s, 1.01 s]
WIDTH = 0.01


def zero_point(low, scale):
    """The u8 zero point of a calibrated range whose low end is `low`, at `scale`."""
    return np.uint8(np.clip(np.rint(-min(0.0, low) / scale), 0, 255))


def attribute(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def scalar_constants(graph):
    """Name -> float of every initializer or Constant output that is a scalar or all-equal."""
    arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = attribute(node, "value", None)
            if value is not None:
                arrays[node.output[0]] = numpy_helper.to_array(value)
    constants = {}
    for name, array in arrays.items():
        if array.size > 0 and np.issubdtype(array.dtype, np.number) and np.all(array == array.flat[0]):
            constants[name] = float(array.flat[0])
    return constants


def region(graph, root, quantized, constants, producers=None):
    """(nodes in graph order, quantized leaves) of the elementwise float region computing `root`.

    None when the region reads anything but quantized activations (`quantized`: their readers
    see DequantizeLinear outputs) and scalar constants, holds a non-elementwise op, or has no
    quantized leaf or more than MAX_LEAVES of them.
    """
    if producers is None:
        producers = {o: (i, n) for i, n in enumerate(graph.node) for o in n.output}
    nodes, leaves, seen, pending = {}, [], set(), [root]
    while pending:
        name = pending.pop()
        if name in seen or name == "":  # "": an omitted optional input (Clip's min or max)
            continue
        seen.add(name)
        if name != root and name in quantized:
            leaves.append(name)
            continue
        if name != root and name in constants:
            continue
        index, node = producers.get(name, (None, None))
        if node is None or node.domain not in ("", "ai.onnx") or node.op_type not in ELEMENTWISE:
            return None
        nodes[index] = node
        pending.extend(node.input)
    if not leaves or len(leaves) > MAX_LEAVES:
        return None
    return [nodes[i] for i in sorted(nodes)], sorted(leaves)


# How much an input's error can grow through a unary op (its steepest slope).
SLOPE = {"Sigmoid": 0.25, "HardSwish": 1.5}


def evaluate(nodes, values, constants, terms):
    """Runs the region's nodes in float64 on `values` (name -> array); returns the last output.

    Also fills `terms` (name -> array, for the leaves on entry): the largest magnitude a float32
    computation of each value passes through. Rounding errors are relative to the operands
    rounded, so an Add whose operands cancel keeps the error of its largest operand.
    """
    def get(name):
        return values[name] if name in values else constants[name]

    def term(name):
        return terms[name] if name in terms else abs(constants[name])

    for node in nodes:
        x = get(node.input[0])
        op = node.op_type
        if op in ("Add", "Sub", "Mul", "Div"):
            y = get(node.input[1])
            out = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op](x, y)
            tx, ty = term(node.input[0]), term(node.input[1])
            if op in ("Add", "Sub"):
                big = np.maximum(tx, ty)
            elif op == "Mul":
                big = np.maximum(tx * np.abs(y), ty * np.abs(x))
            else:
                big = tx / np.abs(y)
            terms[node.output[0]] = np.maximum(big, np.abs(out))
        elif op == "Relu":
            out = np.maximum(x, 0.0)
        elif op == "Sigmoid":
            out = 1.0 / (1.0 + np.exp(-x))
        elif op == "HardSigmoid":
            out = np.clip(attribute(node, "alpha", 0.2) * x + attribute(node, "beta", 0.5), 0.0, 1.0)
        elif op == "HardSwish":
            out = x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)
        elif op == "Clip":  # bounds as inputs since opset 11, as attributes before
            low = get(node.input[1]) if len(node.input) > 1 and node.input[1] else attribute(node, "min", -np.inf)
            high = get(node.input[2]) if len(node.input) > 2 and node.input[2] else attribute(node, "max", np.inf)
            out = np.minimum(np.maximum(x, low), high)
        elif op == "LeakyRelu":
            out = np.where(x < 0, attribute(node, "alpha", 0.01) * x, x)
        elif op == "Tanh":
            out = np.tanh(x)
        else:  # Identity
            out = x
        values[node.output[0]] = np.asarray(out, dtype=np.float64)
        if node.output[0] not in terms:  # a unary op
            slope = attribute(node, "alpha", 0.2) if op == "HardSigmoid" else SLOPE.get(op, 1.0)
            terms[node.output[0]] = np.maximum(slope * term(node.input[0]), np.abs(out))
    return values[nodes[-1].output[0]]


def reachable(nodes, leaves, parameters, constants):
    """(values, terms): every distinct finite value the region can produce from its leaves' u8
    values, and for each the largest term its computation passes through (evaluate)."""
    values, terms = {}, {}
    for i, leaf in enumerate(leaves):
        scale, zero = parameters[leaf]
        # As both runtimes dequantize: (q - zero point) * scale in float32.
        dequantized = (np.arange(256, dtype=np.float32) - np.float32(zero)) * np.float32(scale)
        shape = [1] * len(leaves)
        shape[i] = 256
        values[leaf] = dequantized.astype(np.float64).reshape(shape)
        # ONNX Runtime's QLinearAdd sums q * (scale / output scale) and folds the zero points'
        # products into a constant: its terms reach max(q, zero point) * scale, not |q - zp| * scale.
        terms[leaf] = (np.maximum(np.arange(256.0), float(zero)) * float(scale)).reshape(shape)
    every = [256] * len(leaves)
    with np.errstate(all="ignore"):
        out = np.broadcast_to(evaluate(nodes, values, constants, terms), every).ravel()
        big = np.broadcast_to(terms[nodes[-1].output[0]], every).ravel()
    finite = np.isfinite(out) & np.isfinite(big)
    unique, inverse = np.unique(out[finite], return_inverse=True)
    largest = np.zeros(len(unique))
    np.maximum.at(largest, inverse.ravel(), big[finite])
    return unique, largest


def near_ties(values, scale, zero, terms=None):
    """How many of `values` quantize, at scale and zero point, within a margin of a x.5 tie.

    The margin is 4 float32 ulps of the quantized value: ONNX Runtime and cleave both compute
    y / scale + zero point in float32 (and y itself from float32 dequantized inputs), a few
    roundings apart, so a value that close to a tie can round either way between them. With
    `terms` (reachable's), the ulps are those of the largest term in quanta where that is
    larger: r3d_18_int8 reached y / scale = 2.4999959 as 206.7 - 205.1 + 0.8 in ONNX Runtime's
    QLinearAdd, whose float32 error is that of 206.7 (docs/results/heldout.md, failure 2).
    Values that quantize below 0 or above 255 are clipped, so their ties do not matter.
    """
    v = values / np.float64(scale) + float(zero)
    magnitude = np.maximum(np.abs(values / np.float64(scale)) + float(zero), 1.0)
    if terms is not None:
        magnitude = np.maximum(magnitude, terms / np.float64(scale) + float(zero))
    margin = 4.0 * 2.0 ** -23 * 2.0 ** np.floor(np.log2(magnitude))
    below = np.floor(v)
    close = np.abs(v - (below + 0.5)) <= margin
    return int(np.count_nonzero(close & (below >= 0) & (below <= 254)))


def search_scale(values, scale, low, terms=None):
    """(scale, zero point, near ties) in [scale, 1.01 scale] with the fewest near ties.

    Scales only grow, so the calibrated range stays covered; the smallest wins a tie.
    """
    best = None
    for step in range(STEPS + 1):
        candidate = np.float32(scale * (1.0 + WIDTH * step / STEPS))
        zero = zero_point(low, candidate)
        count = near_ties(values, candidate, zero, terms)
        if best is None or count < best[2]:
            best = (candidate, zero, count)
            if count == 0:
                break
    return best


def graph_order(graph, names):
    """`names` sorted by the position of their producer (graph inputs first)."""
    position = {o: i for i, n in enumerate(graph.node) for o in n.output}
    return sorted(names, key=lambda name: position.get(name, -1))


def adjust_scales(graph, activations, parameters, ranges, search=True):
    """Moves each float-region activation's scale off near-ties; updates `parameters` in place.

    In graph order, so that each region is enumerated with its leaves' final scales.
    Returns (regions, adjusted, near ties before, near ties after).
    """
    quantized = set(activations)
    constants = scalar_constants(graph)
    producers = {o: (i, n) for i, n in enumerate(graph.node) for o in n.output}
    regions = adjusted = before = after = 0
    for name in graph_order(graph, activations):
        found = region(graph, name, quantized, constants, producers)
        if found is None:
            continue
        regions += 1
        values, terms = reachable(*found, parameters, constants)
        scale, zero = parameters[name]
        count = near_ties(values, scale, zero, terms)
        before += count
        if search and count > 0:
            scale, zero, count = search_scale(values, scale, ranges[name][0], terms)
            if scale != parameters[name][0]:
                parameters[name] = (scale, zero)
                adjusted += 1
        after += count
    return regions, adjusted, before, after
