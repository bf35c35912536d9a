// Static shapes for values ONNX's inference left open, from the runtime's own kernels.
#pragma once

#include "ir/graph.h"

namespace cleave {

/// One sweep in topological order over the nodes with an output of unknown shape: where every
/// input has a static shape and every input whose contents decide the output's shape (a
/// Reshape's shape, a Pad's pads, a Slice's bounds) is a constant, the node's kernel is
/// prepared on zero-filled stand-ins for the other inputs and its output specs become the
/// outputs' shapes and types. Shapes found feed later nodes in the same sweep. Only ops whose
/// shape-deciding inputs are listed here are tried (view, elementwise and reduction ops,
/// MatMul, Softmax, LayerNormalization); a kernel that refuses leaves its outputs open.
/// Returns how many values got a static shape. Folding after a sweep turns more Shape nodes
/// into constants, and the next sweep goes on from there (Swin: each block's padding sizes
/// are computed from its input's shape).
int complete_shapes_by_kernels(Graph& graph);

}  // namespace cleave
