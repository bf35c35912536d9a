// Dead-code elimination by a backward walk from the graph outputs.
#include "passes/dead_code.h"

#include <algorithm>

namespace cleave {

std::vector<bool> live_values(const Graph& graph, const std::vector<NodeId>& order) {
  std::vector<bool> live = values_read_by_bodies(graph);
  for (ValueId output : graph.outputs()) live[output] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = graph.node(*it);
    bool needed =
        std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId v) { return live[v]; });
    if (!needed) continue;
    for (ValueId input : node.inputs) {
      if (input != kNoValue) live[input] = true;
    }
  }
  return live;
}

PassResult eliminate_dead_code(Graph& graph) {
  PassResult result{"dead-code elimination", {}, {}};
  std::vector<NodeId> order = graph.topological_order();
  std::vector<bool> live = live_values(graph, order);
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (std::none_of(node.outputs.begin(), node.outputs.end(),
                     [&](ValueId v) { return live[v]; })) {
      graph.remove_node(id);
      result.add("nodes removed");
    }
  }
  for (ValueId id : graph.initializers()) {
    Value& v = graph.value(id);
    if (live[id] || v.is_graph_output || !graph.consumers(id).empty()) continue;
    // Values cannot be deleted (ids are stable); one that is neither produced, an input nor an
    // initializer is simply not part of the model any more.
    v.initializer.reset();
    v.is_graph_input = false;
    result.add("initializers removed");
  }
  return result;
}

}  // namespace cleave
