// Floating-point operation and parameter counts of single nodes, from static shapes.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace cleave {

/// FLOPs of one node, counting a multiply-add as 2, or nullopt when the op is not covered or a
/// shape it needs is not static. The conventions (docs/commands/inspect.md):
///
///   Conv:           2 * |Y| * (C_in/group * prod(kernel)), + |Y| with a bias
///   ConvTranspose:  2 * |X| * (C_out/group * prod(kernel)), + |Y| with a bias
///   Gemm:           2 * M * N * K, + M * N with C;  MatMul: 2 * |Y| * K
///   MaxPool, AveragePool, LpPool: |Y| * prod(kernel);  Global*Pool, Reduce*: |X|
///   BatchNormalization: 2 * |Y| (folded scale and shift)
///   LayerNormalization, InstanceNormalization, GroupNormalization: 5 * |Y|
///   Softmax, LogSoftmax: 3 * |Y|;  LRN: |Y| * size
///   elementwise unary and binary ops: |Y|;  Sum, Mean, Max, Min: (inputs - 1) * |Y|
///   data movement (Concat, Reshape, Transpose, Gather, Slice, Cast, Constant, ...): 0
///
/// |Y| and |X| are the element counts of the first output and input.
std::optional<int64_t> node_flops(const Graph& graph, NodeId node);

/// Bytes of the constant tensors (initializers) the node reads, each counted once per node.
int64_t node_parameter_bytes(const Graph& graph, NodeId node);

/// Bytes of the node's outputs, or nullopt when one of them has no static shape or dtype.
std::optional<int64_t> node_output_bytes(const Graph& graph, NodeId node);

}  // namespace cleave
