// Sub-model extraction: boundary values, used initializers and the nodes of a selection.
#include "onnx/extract.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "ir/model_header.h"
#include "ir/scope.h"
#include "onnx/onnx_export.h"

namespace cleave {

namespace {

// Interface values first in the graph's own order, then the rest by id.
std::vector<ValueId> interface_first(const std::set<ValueId>& chosen,
                                     const std::vector<ValueId>& interface) {
  std::vector<ValueId> ordered;
  std::set<ValueId> placed;
  for (ValueId id : interface) {
    if (chosen.count(id) && placed.insert(id).second) ordered.push_back(id);
  }
  for (ValueId id : chosen) {
    if (!placed.count(id)) ordered.push_back(id);
  }
  return ordered;
}

ValueId copy_value(const Value& from, Graph& into) {
  ValueId id = into.add_value(from.name, from.dtype, from.shape);
  into.value(id).opaque_type = from.opaque_type;
  return id;
}

}  // namespace

Graph extract_subgraph(const Graph& graph, const std::vector<NodeId>& nodes) {
  std::string where = fmt::format("extracting from graph '{}'", graph.name);
  if (nodes.empty()) throw Error(where + ": no nodes selected");
  std::vector<bool> member(graph.node_capacity(), false);
  for (NodeId id : nodes) {
    if (id < 0 || static_cast<std::size_t>(id) >= member.size() || graph.node(id).removed) {
      throw Error(fmt::format("{}: node id {} does not exist", where, id));
    }
    if (member[id])
      throw Error(fmt::format("{}: node {} is selected twice", where, graph.describe(id)));
    member[id] = true;
  }

  std::vector<NodeId> order = scoped_topological_order(graph);
  std::vector<std::vector<ValueId>> implicit(graph.node_capacity());
  for (NodeId id : order) implicit[id] = implicit_inputs(graph, id);

  std::set<ValueId> boundary_inputs, used_initializers, boundary_outputs, read_outside;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    std::vector<ValueId> reads = node.inputs;
    reads.insert(reads.end(), implicit[id].begin(), implicit[id].end());
    for (ValueId input : reads) {
      if (input == kNoValue) continue;
      if (!member[id]) {
        read_outside.insert(input);
        continue;
      }
      const Value& value = graph.value(input);
      if (value.initializer) {
        used_initializers.insert(input);
      } else if (value.producer < 0 || !member[value.producer]) {
        boundary_inputs.insert(input);
      }
    }
  }
  for (NodeId id : order) {
    if (!member[id]) continue;
    for (ValueId output : graph.node(id).outputs) {
      if (graph.value(output).is_graph_output || read_outside.count(output)) {
        boundary_outputs.insert(output);
      }
    }
  }
  if (boundary_outputs.empty()) {
    throw Error(
        fmt::format("{}: the selected nodes produce nothing that is read outside them or "
                    "is a graph output",
                    where));
  }

  Graph sub = empty_graph_like(graph);
  std::vector<ValueId> mapping(graph.value_capacity(), kNoValue);
  for (ValueId id : used_initializers) {
    const Value& value = graph.value(id);
    mapping[id] = sub.add_initializer(value.name, *value.initializer);
    sub.value(mapping[id]).is_graph_input = value.is_graph_input;
  }
  std::vector<ValueId> inputs;
  for (ValueId id : interface_first(boundary_inputs, graph.inputs())) {
    mapping[id] = copy_value(graph.value(id), sub);
    inputs.push_back(mapping[id]);
  }
  sub.set_inputs(inputs);
  for (NodeId id : order) {
    if (!member[id]) continue;
    for (ValueId output : graph.node(id).outputs)
      mapping[output] = copy_value(graph.value(output), sub);
  }
  for (NodeId id : order) {
    if (!member[id]) continue;
    const Node& node = graph.node(id);
    std::vector<ValueId> node_inputs, node_outputs;
    for (ValueId input : node.inputs)
      node_inputs.push_back(input == kNoValue ? kNoValue : mapping[input]);
    for (ValueId output : node.outputs) node_outputs.push_back(mapping[output]);
    NodeId copy = sub.add_node(node.op_type, std::move(node_inputs), std::move(node_outputs),
                               node.attributes, node.name, node.domain);
    sub.node(copy).doc_string = node.doc_string;
  }
  for (ValueId id : interface_first(boundary_outputs, graph.outputs()))
    sub.mark_output(mapping[id]);
  return sub;
}

onnx::ModelProto extract_submodel(const Graph& graph, const std::vector<NodeId>& nodes) {
  Graph sub = extract_subgraph(graph, nodes);
  auto check_typed = [&](ValueId id, const char* role) {
    const Value& value = sub.value(id);
    if (value.opaque_type) return;
    if (value.dtype == DataType::kUndefined || !value.shape.rank_known) {
      throw Error(
          fmt::format("extracting from graph '{}': {} '{}' has no known element type and "
                      "rank, which an ONNX model's {} needs",
                      graph.name, role, value.name, role));
    }
  };
  for (ValueId id : sub.inputs()) check_typed(id, "input");
  for (ValueId id : sub.outputs()) check_typed(id, "output");
  return to_onnx(sub);
}

void extract_submodel_to_file(const Graph& graph, const std::vector<NodeId>& nodes,
                              const std::string& path) {
  onnx::ModelProto model;
  try {
    model = extract_submodel(graph, nodes);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  write_model_file(model, path);
}

}  // namespace cleave
