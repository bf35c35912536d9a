// The region of a graph shaped at run time: data-dependent ops, sub-graphs, and what reads them.
#include "runtime/run_time_shapes.h"

#include <fmt/core.h>

#include <set>

namespace cleave {

namespace {

// Ops whose output shape follows the values they read (not only their shapes).
bool shaped_by_values(const Node& node) {
  static const std::set<std::string> ops{"NonZero", "NonMaxSuppression", "Unique", "Compress"};
  return node.domain.empty() && ops.count(node.op_type) > 0;
}

const std::string* sub_graph_attribute(const Node& node) {
  for (const auto& [name, attribute] : node.attributes) {
    if (attribute.g || !attribute.graphs.empty()) return &name;
  }
  return nullptr;
}

}  // namespace

std::vector<bool> run_time_nodes(const Graph& graph) {
  std::vector<bool> run_time(graph.node_capacity(), false);
  std::vector<bool> shaped_at_run_time(graph.value_capacity(), false);
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    bool dynamic = shaped_by_values(node) || sub_graph_attribute(node);
    for (ValueId input : node.inputs)
      dynamic = dynamic || (input != kNoValue && shaped_at_run_time[input]);
    if (!dynamic) continue;
    run_time[id] = true;
    for (ValueId output : node.outputs)
      if (output != kNoValue) shaped_at_run_time[output] = true;
  }
  return run_time;
}

std::string run_time_reason(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (const std::string* attribute = sub_graph_attribute(node))
    return fmt::format("runs a sub-graph (attribute '{}')", *attribute);
  if (shaped_by_values(node)) return "makes an output whose shape is known only at run time";
  return "reads a value whose shape is known only at run time";
}

}  // namespace cleave
