// A MatMul's bias Add and its activation (Relu, or GELU spelled out with Erf) fused into the
// MatMul, which the runtime's kernel applies as oneDNN post-ops.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// For each float MatMul whose B is a constant matrix [K, N] with K > 0:
///
///   - `Add(MatMul(a, B), bias)` (either operand order), bias a float constant of N elements
///     shaped [N] or [1, ..., N], becomes the MatMul's input 2;
///   - then a `Relu` of its output, or GELU as PyTorch exports it,
///
///         Mul(Mul(y, Add(Erf(Div(y, 1.4142135)), 1.0)), 0.5)
///
///     (Div may be Mul by 0.70710678; binary operands in either order; the halving may come
///     first, as Mul(Mul(y, 0.5), Add(...))), becomes `activation = "Relu" | "Gelu"`.
///
/// The MatMul writes the last fused node's output, keeping its name. Each removed value must
/// have no other reader, be no graph output and be read by no control-flow body. A bias input
/// and the activation attribute are not ONNX, so like the Conv fusions this pass is for graphs
/// cleave runs. Vision transformers and ConvNeXt have two such MatMuls per block; the bias and
/// GELU were seven passes over the largest activations.
/// Counts: "bias Adds fused into MatMul", "Relu nodes fused into MatMul", "GELUs fused into
/// MatMul".
PassResult fuse_matmul_epilogues(Graph& graph);

}  // namespace cleave
