// Pass results and the shared graph queries and edits of the passes.
#include "passes/pass.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace cleave {

namespace {

// unread_weight_needs(): per thread, as each load runs its passes on its own thread.
thread_local std::vector<std::string> unread_needs;

bool is_defined_in(const Graph& body, ValueId id) {
  const Value& v = body.value(id);
  return v.producer >= 0 || v.is_graph_input || v.initializer.has_value();
}

std::vector<std::shared_ptr<const Graph>> bodies_of(const Node& node) {
  std::vector<std::shared_ptr<const Graph>> bodies;
  for (const auto& [key, attribute] : node.attributes) {
    if (attribute.kind == AttributeKind::kGraph && attribute.g) bodies.push_back(attribute.g);
    for (const auto& body : attribute.graphs) {
      if (body) bodies.push_back(body);
    }
  }
  return bodies;
}

// Names `body` reads from enclosing graphs: its used values that nothing in it defines, and
// what its own nested bodies read that it does not define.
void collect_outer_names(const Graph& body, std::set<std::string>& names) {
  for (std::size_t index = 0; index < body.value_capacity(); ++index) {
    auto id = static_cast<ValueId>(index);
    bool used = body.value(id).is_graph_output || !body.consumers(id).empty();
    if (used && !is_defined_in(body, id)) names.insert(body.value(id).name);
  }
  for (NodeId node : body.node_ids()) {
    for (const auto& nested : bodies_of(body.node(node))) {
      std::set<std::string> inner;
      collect_outer_names(*nested, inner);
      for (const std::string& name : inner) {
        auto id = body.find_value(name);
        if (!id || !is_defined_in(body, *id)) names.insert(name);
      }
    }
  }
}

}  // namespace

void PassResult::add(std::string_view what, int64_t amount) {
  for (auto& [name, count] : counts) {
    if (name == what) {
      count += amount;
      return;
    }
  }
  counts.emplace_back(std::string(what), amount);
}

int64_t PassResult::count(std::string_view what) const {
  for (const auto& [name, count] : counts) {
    if (name == what) return count;
  }
  return 0;
}

bool PassResult::changed() const {
  return std::any_of(counts.begin(), counts.end(),
                     [](const auto& entry) { return entry.second != 0; });
}

std::string PassResult::summary() const {
  std::vector<std::string> parts;
  for (const auto& [name, count] : counts) {
    if (count != 0) parts.push_back(fmt::format("{} {}", count, name));
  }
  if (parts.empty()) return pass + ": no change";
  return fmt::format("{}: {}", pass, fmt::join(parts, ", "));
}

void PassResult::merge_counts(const PassResult& other) {
  for (const auto& [name, count] : other.counts) add(name, count);
}

const std::vector<std::string>& unread_weight_needs() {
  return unread_needs;
}

void note_unread_weight_need(const Graph& graph, ValueId value) {
  if (is_unread_weight(graph, value)) unread_needs.push_back(graph.value(value).name);
}

bool is_constant(const Graph& graph, ValueId value) {
  if (value == kNoValue) return false;
  const Value& v = graph.value(value);
  // A pass asking for bytes a whole load would have: it may decide otherwise without them.
  note_unread_weight_need(graph, value);
  return v.initializer.has_value() && v.initializer->has_data() && !v.is_graph_input;
}

bool is_unread_weight(const Graph& graph, ValueId value) {
  if (value == kNoValue) return false;
  const Value& v = graph.value(value);
  return v.initializer.has_value() && !v.initializer->has_data() && !v.is_graph_input &&
         v.initializer->element_count() > 0;
}

std::vector<bool> values_read_by_bodies(const Graph& graph) {
  std::vector<bool> read(graph.value_capacity(), false);
  std::set<std::string> names;
  for (NodeId node : graph.node_ids()) {
    for (const auto& body : bodies_of(graph.node(node))) collect_outer_names(*body, names);
  }
  for (const std::string& name : names) {
    if (auto id = graph.find_value(name)) read[*id] = true;
  }
  return read;
}

std::string unique_value_name(const Graph& graph, const std::string& base) {
  if (!graph.find_value(base)) return base;
  for (int suffix = 1;; ++suffix) {
    std::string candidate = fmt::format("{}_{}", base, suffix);
    if (!graph.find_value(candidate)) return candidate;
  }
}

void set_constant_input(Graph& graph, NodeId node, std::size_t slot, TensorData data,
                        const std::string& name_base) {
  Node& n = graph.node(node);
  if (n.inputs.size() <= slot) n.inputs.resize(slot + 1, kNoValue);
  ValueId current = n.inputs[slot];
  if (current != kNoValue && (is_unread_weight(graph, current) || is_constant(graph, current)) &&
      !graph.value(current).is_graph_output && graph.consumers(current).size() == 1) {
    Value& v = graph.value(current);
    v.dtype = data.dtype;
    v.shape = Shape::of(data.dims);
    v.initializer = std::move(data);
    return;
  }
  ValueId fresh = graph.add_initializer(unique_value_name(graph, name_base), std::move(data));
  graph.set_node_input(node, slot, fresh);
}

std::optional<float> constant_float_scalar(const Graph& graph, ValueId value) {
  if (value == kNoValue) return std::nullopt;
  // A weight of more elements is no scalar, whether its bytes were read or not.
  const auto& initializer = graph.value(value).initializer;
  if (initializer && initializer->element_count() != 1) return std::nullopt;
  if (!is_constant(graph, value)) return std::nullopt;
  const TensorData& data = *graph.value(value).initializer;
  if (data.dtype != DataType::kFloat || data.element_count() != 1 || data.as<float>().size() != 1) {
    return std::nullopt;
  }
  return data.as<float>()[0];
}

bool is_single_output_op(const Graph& graph, NodeId id, std::string_view op) {
  if (id < 0) return false;
  const Node& node = graph.node(id);
  return !node.removed && node.op_type == op && node.domain.empty() && node.outputs.size() == 1 &&
         !node.inputs.empty();
}

bool is_removable(const Graph& graph, ValueId value, const std::vector<bool>& read_by_bodies) {
  return !graph.value(value).is_graph_output && !read_by_bodies.at(value);
}

NodeId only_reader(const Graph& graph, ValueId value, const std::vector<bool>& read_by_bodies) {
  if (!is_removable(graph, value, read_by_bodies)) return -1;
  const std::vector<NodeId>& readers = graph.consumers(value);
  if (readers.empty()) return -1;
  for (NodeId reader : readers) {
    if (reader != readers.front()) return -1;
  }
  return readers.front();
}

ValueId other_input(const Node& node, ValueId known) {
  if (node.inputs.size() != 2) return kNoValue;
  if (node.inputs[0] == known) return node.inputs[1];
  if (node.inputs[1] == known) return node.inputs[0];
  return kNoValue;
}

bool can_merge_into_producer(const Graph& graph, NodeId node,
                             const std::vector<bool>& read_by_bodies) {
  const Node& n = graph.node(node);
  if (n.inputs.empty() || n.outputs.empty() || n.inputs[0] == kNoValue) return false;
  ValueId input = n.inputs[0];
  const Value& v = graph.value(input);
  return v.producer >= 0 && !v.is_graph_output && !read_by_bodies.at(input);
}

void merge_into_producer(Graph& graph, NodeId node) {
  ValueId input = graph.node(node).inputs.at(0);
  ValueId output = graph.node(node).outputs.at(0);
  NodeId producer = graph.value(input).producer;
  if (producer < 0) {
    throw Error(fmt::format("merging node {} into its producer: input '{}' has none",
                            graph.describe(node), graph.value(input).name));
  }
  graph.remove_node(node);
  graph.replace_all_uses(input, output);
  // The Graph has no call to rename a node's output; outputs are not part of the consumer
  // index, so moving the producer link by hand keeps the graph consistent.
  Node& p = graph.node(producer);
  std::replace(p.outputs.begin(), p.outputs.end(), input, output);
  graph.value(output).producer = producer;
  graph.value(input).producer = -1;
}

}  // namespace cleave
