// Static weights per op type and the longest weighted path through the node DAG.
#include "analysis/static_cost.h"

#include <algorithm>
#include <string_view>

namespace cleave {

namespace {

bool is_one_of(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

int64_t largest_kernel_dim(const Graph& graph, const Node& node) {
  std::vector<int64_t> kernel = node.ints_attribute("kernel_shape");
  if (kernel.empty()) {
    // Conv weights are [C_out, C_in/group, k...]; QLinearConv has its weight at slot 3.
    const std::size_t slot = node.op_type == "QLinearConv" ? 3 : 1;
    if (slot < node.inputs.size() && node.inputs[slot] != kNoValue) {
      const Shape& shape = graph.value(node.inputs[slot]).shape;
      if (shape.rank_known && shape.rank() > 2) {
        for (std::size_t i = 2; i < shape.rank(); ++i) {
          if (!shape.dims[i].is_known()) return -1;
          kernel.push_back(shape.dims[i].size);
        }
      }
    }
  }
  if (kernel.empty()) return -1;
  return *std::max_element(kernel.begin(), kernel.end());
}

}  // namespace

int64_t static_node_weight(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  const std::string_view op = node.op_type;
  if (is_one_of(op, {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"})) {
    const int64_t k = largest_kernel_dim(graph, node);
    if (k < 0) return 3;
    if (k <= 1) return 2;
    if (k <= 3) return 3;
    if (k <= 5) return 4;
    return 5;
  }
  if (is_one_of(op, {"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum"})) return 3;
  if (is_one_of(op, {"LSTM", "GRU", "RNN"})) return 5;
  if (is_one_of(op, {"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool",
                     "GlobalLpPool", "MaxRoiPool", "RoiAlign", "Softmax", "LogSoftmax",
                     "LayerNormalization", "InstanceNormalization", "GroupNormalization", "LRN"}) ||
      op.starts_with("Reduce")) {
    return 2;
  }
  return 1;
}

StaticCostReport analyze_static_cost(const Graph& graph) {
  StaticCostReport report;
  report.node_weight.assign(graph.node_capacity(), 0);
  const std::vector<NodeId> order = graph.topological_order();
  if (order.empty()) return report;

  // distance[v]: heaviest path ending at v, counting v's weight and one unit per edge.
  std::vector<int64_t> distance(graph.node_capacity(), 0);
  std::vector<NodeId> best_predecessor(graph.node_capacity(), -1);
  NodeId heaviest_end = -1;
  for (NodeId v : order) {
    const int64_t weight = static_node_weight(graph, v);
    report.node_weight[v] = weight;
    report.total_weight += weight;
    int64_t longest_into = 0;
    for (NodeId u : graph.predecessors(v)) {
      if (best_predecessor[v] < 0 || distance[u] + 1 > longest_into) {
        longest_into = distance[u] + 1;
        best_predecessor[v] = u;
      }
    }
    distance[v] = longest_into + weight;
    if (heaviest_end < 0 || distance[v] > distance[heaviest_end]) heaviest_end = v;
  }
  report.critical_path_length = distance[heaviest_end];
  for (NodeId v = heaviest_end; v >= 0; v = best_predecessor[v]) {
    report.critical_path.push_back(v);
  }
  std::reverse(report.critical_path.begin(), report.critical_path.end());
  report.parallelism =
      static_cast<double>(report.total_weight) / static_cast<double>(report.critical_path_length);
  return report;
}

}  // namespace cleave
