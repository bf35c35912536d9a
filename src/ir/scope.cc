// Outer-scope reads of control-flow bodies: which enclosing values a body and its node depend on.
#include "ir/scope.h"

#include <fmt/core.h>

#include <algorithm>
#include <queue>
#include <set>

#include "support/topological_order.h"

namespace cleave {

namespace {

bool defined_here(const Value& value) {
  return value.producer >= 0 || value.is_graph_input || value.initializer.has_value();
}

template <typename Visit>
void for_each_subgraph(const Node& node, Visit&& visit) {
  for (const auto& [key, attribute] : node.attributes) {
    if (attribute.kind == AttributeKind::kGraph && attribute.g) visit(*attribute.g);
    if (attribute.kind == AttributeKind::kGraphs) {
      for (const auto& graph : attribute.graphs) {
        if (graph) visit(*graph);
      }
    }
  }
}

}  // namespace

std::vector<std::string> outer_scope_names(const Graph& body) {
  std::vector<std::string> names;
  std::set<std::string, std::less<>> seen;
  for (std::size_t id = 0; id < body.value_capacity(); ++id) {
    const Value& value = body.value(static_cast<ValueId>(id));
    bool used = value.is_graph_output || !body.consumers(static_cast<ValueId>(id)).empty();
    if (used && !defined_here(value) && seen.insert(value.name).second) names.push_back(value.name);
  }
  for (NodeId node : body.node_ids()) {
    for_each_subgraph(body.node(node), [&](const Graph& nested) {
      for (std::string& name : outer_scope_names(nested)) {
        auto local = body.find_value(name);
        if (local && defined_here(body.value(*local))) continue;
        if (seen.insert(name).second) names.push_back(std::move(name));
      }
    });
  }
  return names;
}

std::vector<ValueId> implicit_inputs(const Graph& graph, NodeId node) {
  std::vector<ValueId> found;
  std::set<ValueId> seen;
  for_each_subgraph(graph.node(node), [&](const Graph& body) {
    for (const std::string& name : outer_scope_names(body)) {
      auto value = graph.find_value(name);
      if (value && seen.insert(*value).second) found.push_back(*value);
    }
  });
  return found;
}

std::vector<NodeId> scoped_topological_order(const Graph& graph) {
  std::size_t capacity = graph.node_capacity();
  std::vector<std::vector<int>> successors(capacity);
  std::vector<std::vector<int>> predecessors(capacity);
  std::vector<bool> live(capacity, false);
  std::vector<NodeId> producers;  // Reused: a set per node was a large import's allocations.
  for (NodeId node : graph.node_ids()) {
    live[node] = true;
    producers.clear();
    auto depend_on = [&](ValueId value) {
      if (value == kNoValue) return;
      NodeId producer = graph.value(value).producer;
      if (producer >= 0 && !graph.node(producer).removed) producers.push_back(producer);
    };
    for (ValueId input : graph.node(node).inputs) depend_on(input);
    for (ValueId input : implicit_inputs(graph, node)) depend_on(input);
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    for (NodeId producer : producers) {
      successors[producer].push_back(node);
      predecessors[node].push_back(producer);
    }
  }
  std::vector<int> order = topological_order(successors, {}, live);
  if (order.size() != graph.node_count()) {
    const std::vector<int> cycle = find_cycle(predecessors, order, live);
    throw Error(fmt::format("graph '{}' has a cycle through node {}", graph.name,
                            graph.describe(cycle.empty() ? 0 : cycle.front())));
  }
  return {order.begin(), order.end()};
}

int make_captures_explicit(Graph& graph) {
  int changed = 0;
  for (NodeId id : graph.node_ids()) {
    if (graph.node(id).attribute(kCapturesAttribute)) continue;
    const std::vector<ValueId> captured = implicit_inputs(graph, id);
    if (captured.empty()) continue;
    std::vector<std::string> names;
    for (ValueId value : captured) {
      Node& node = graph.node(id);
      node.inputs.push_back(kNoValue);
      graph.set_node_input(id, node.inputs.size() - 1, value);
      names.push_back(graph.value(value).name);
    }
    graph.node(id).set_attribute(std::string(kCapturesAttribute),
                                 Attribute::of_strings(std::move(names)));
    ++changed;
  }
  return changed;
}

std::size_t captured_input_count(const Node& node) {
  const Attribute* captures = node.attribute(kCapturesAttribute);
  return captures ? captures->strings.size() : 0;
}

}  // namespace cleave
