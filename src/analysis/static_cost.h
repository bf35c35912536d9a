// Ramiel's static operator weights, the weighted critical path and the parallelism factor.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// The static weight of one node. The Ramiel paper (Das & Rauchwerger, Sec. III-A) weighs heavy
/// ops above elementwise ones and larger conv kernels above smaller ones but gives no table;
/// cleave uses this one:
///
///   Conv, ConvTranspose, ConvInteger, QLinearConv, by the largest kernel dimension k:
///       k <= 1: 2,  k <= 3: 3,  k <= 5: 4,  k >= 6: 5  (kernel unknown: 3)
///   MatMul, Gemm, MatMulInteger, QLinearMatMul, Einsum: 3
///   LSTM, GRU, RNN: 5
///   pooling (MaxPool, AveragePool, LpPool, Global*Pool, MaxRoiPool, RoiAlign),
///   Softmax, LogSoftmax, LayerNormalization, InstanceNormalization, GroupNormalization, LRN,
///   Reduce*: 2
///   everything else (elementwise, Concat, Reshape, BatchNormalization, Gather, ...): 1
///
/// The kernel comes from the kernel_shape attribute, else from the weight's static shape.
int64_t static_node_weight(const Graph& graph, NodeId node);

struct StaticCostReport {
  std::vector<int64_t> node_weight;  ///< By NodeId; 0 for removed nodes.
  int64_t total_weight = 0;          ///< Sum of all live nodes' weights ("Wt. NodeCost").
  /// The heaviest path, source to sink; its length counts each node's weight plus one unit per
  /// edge ("Wt. CP"). Ties go to the path found first in topological order.
  std::vector<NodeId> critical_path;
  int64_t critical_path_length = 0;
  /// total_weight / critical_path_length (Ramiel's Table I); 0 for an empty graph. Below 1 for
  /// chains, since the path also pays for its edges.
  double parallelism = 0;
};

/// Weights, critical path and parallelism of `graph` (edges: distinct producer-consumer pairs
/// of nodes). Throws Error on a cycle.
StaticCostReport analyze_static_cost(const Graph& graph);

}  // namespace cleave
