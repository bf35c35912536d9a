// Layer normalization spelled out in elementwise ops (PyTorch's export below opset 17) fused
// into one LayerNormalization node.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Replaces each chain
///
///     m = ReduceMean(x)            over the trailing axes, keepdims
///     d = Sub(x, m)
///     s = Pow(d, 2.0) | Mul(d, d)
///     v = ReduceMean(s)            over the same axes
///     e = Add(v, epsilon)          epsilon a constant scalar (either operand order)
///     r = Sqrt(e)
///     n = Div(d, r)
///     [g = Mul(n, scale)]          scale, bias constants broadcasting over the normalized
///     [y = Add(g, bias)]           dims only (either operand order)
///
/// by `y = LayerNormalization[axis, epsilon](x, scale, bias)`, named after the first
/// ReduceMean; without a Mul the scale is a new initializer of ones. Every intermediate value
/// must have no reader outside the chain, be no graph output and be read by no control-flow
/// body, and x must be float with a known rank. ConvNeXt, ViT and the encoder layers carry
/// one per block: nine passes over the data become one oneDNN kernel. The result is valid
/// ONNX only from opset 17, so like the Conv fusions this pass is for graphs cleave runs.
/// Count: "layer normalizations fused".
PassResult fuse_layer_norms(Graph& graph);

}  // namespace cleave
