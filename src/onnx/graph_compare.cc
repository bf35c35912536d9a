// Structural graph comparison: nodes in topological order, values by name, bodies recursively.
#include "onnx/graph_compare.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cstring>
#include <set>

#include "ir/scope.h"
#include "ir/text.h"

namespace cleave {

namespace {

std::vector<NodeId> comparison_order(const Graph& graph) {
  try {
    return scoped_topological_order(graph);
  } catch (const Error&) {
    return graph.node_ids();
  }
}

std::string value_name(const Graph& graph, ValueId id) {
  return id == kNoValue ? std::string("<none>") : graph.value(id).name;
}

std::vector<std::string> names_of(const Graph& graph, const std::vector<ValueId>& ids) {
  std::vector<std::string> names;
  for (ValueId id : ids) names.push_back(value_name(graph, id));
  return names;
}

// Values that take part in the graph: used, produced by a live node, or part of its interface.
std::set<std::string> live_value_names(const Graph& graph) {
  std::set<std::string> names;
  for (std::size_t index = 0; index < graph.value_capacity(); ++index) {
    auto id = static_cast<ValueId>(index);
    const Value& value = graph.value(id);
    bool produced = value.producer >= 0 && !graph.node(value.producer).removed;
    if (produced || value.initializer || value.is_graph_input || value.is_graph_output ||
        !graph.consumers(id).empty()) {
      names.insert(value.name);
    }
  }
  return names;
}

class Comparer {
 public:
  explicit Comparer(std::string* difference) : difference_(difference) {}

  bool graphs(const Graph& a, const Graph& b, const std::string& where);

 private:
  bool fail(const std::string& message) {
    if (difference_) *difference_ = message;
    return false;
  }
  bool tensors(const TensorData& a, const TensorData& b, const std::string& where);
  bool attributes(const Attribute& a, const Attribute& b, const std::string& where);
  bool values(const Graph& ga, const Value& a, const Graph& gb, const Value& b,
              const std::string& where);
  bool nodes(const Graph& ga, NodeId a, const Graph& gb, NodeId b, const std::string& where);

  std::string* difference_;
};

bool Comparer::tensors(const TensorData& a, const TensorData& b, const std::string& where) {
  if (a.dtype != b.dtype) {
    return fail(
        fmt::format("{}: data type {} vs {}", where, dtype_name(a.dtype), dtype_name(b.dtype)));
  }
  if (a.dims != b.dims) {
    return fail(fmt::format("{}: dims [{}] vs [{}]", where, fmt::join(a.dims, ","),
                            fmt::join(b.dims, ",")));
  }
  if ((a.bytes == nullptr) != (b.bytes == nullptr) ||
      (a.strings == nullptr) != (b.strings == nullptr)) {
    return fail(fmt::format("{}: one tensor has data, the other not", where));
  }
  if (a.bytes && *a.bytes != *b.bytes) return fail(fmt::format("{}: tensor bytes differ", where));
  if (a.strings && *a.strings != *b.strings) {
    return fail(fmt::format("{}: tensor strings differ", where));
  }
  return true;
}

bool Comparer::attributes(const Attribute& a, const Attribute& b, const std::string& where) {
  if (a.kind != b.kind) {
    return fail(fmt::format("{}: kind {} vs {}", where, a.kind_name(), b.kind_name()));
  }
  switch (a.kind) {
    case AttributeKind::kTensor:
      return tensors(a.t, b.t, where);
    case AttributeKind::kTensors:
      if (a.tensors.size() != b.tensors.size()) return fail(where + ": tensor counts differ");
      for (std::size_t i = 0; i < a.tensors.size(); ++i) {
        if (!tensors(a.tensors[i], b.tensors[i], fmt::format("{}[{}]", where, i))) return false;
      }
      return true;
    case AttributeKind::kGraph:
      if (!a.g || !b.g) {
        return a.g == b.g || fail(fmt::format("{}: one graph is missing", where));
      }
      return graphs(*a.g, *b.g, where);
    case AttributeKind::kGraphs:
      if (a.graphs.size() != b.graphs.size()) return fail(where + ": graph counts differ");
      for (std::size_t i = 0; i < a.graphs.size(); ++i) {
        if (!a.graphs[i] || !b.graphs[i]) {
          if (a.graphs[i] != b.graphs[i]) return fail(fmt::format("{}[{}]: missing", where, i));
          continue;
        }
        if (!graphs(*a.graphs[i], *b.graphs[i], fmt::format("{}[{}]", where, i))) return false;
      }
      return true;
    default:
      // Scalars, lists and serialized protos: the IR's own comparison is exact (bitwise floats).
      return a == b || fail(fmt::format("{}: values differ", where));
  }
}

bool Comparer::values(const Graph& ga, const Value& a, const Graph& gb, const Value& b,
                      const std::string& where) {
  std::string at = fmt::format("{}: value '{}'", where, a.name);
  if (a.dtype != b.dtype || a.shape != b.shape) {
    return fail(fmt::format("{}: type {} vs {}", at, print_type(a.dtype, a.shape),
                            print_type(b.dtype, b.shape)));
  }
  if (a.opaque_type != b.opaque_type) return fail(at + ": non-tensor types differ");
  if (a.is_graph_input != b.is_graph_input || a.is_graph_output != b.is_graph_output) {
    return fail(at + ": graph input/output flags differ");
  }
  if ((a.producer >= 0) != (b.producer >= 0)) {
    return fail(at + ": produced by a node in one graph only");
  }
  if (a.producer >= 0 && ga.node(a.producer).name != gb.node(b.producer).name) {
    return fail(at + ": produced by different nodes");
  }
  if (a.initializer.has_value() != b.initializer.has_value()) {
    return fail(at + ": an initializer in one graph only");
  }
  if (a.initializer) return tensors(*a.initializer, *b.initializer, at);
  return true;
}

bool Comparer::nodes(const Graph& ga, NodeId a, const Graph& gb, NodeId b,
                     const std::string& where) {
  const Node& na = ga.node(a);
  const Node& nb = gb.node(b);
  std::string at = fmt::format("{}: node {}", where, ga.describe(a));
  if (na.op_type != nb.op_type || na.domain != nb.domain || na.name != nb.name) {
    return fail(fmt::format("{} vs node {}", at, gb.describe(b)));
  }
  if (na.doc_string != nb.doc_string) return fail(at + ": doc strings differ");
  if (names_of(ga, na.inputs) != names_of(gb, nb.inputs)) {
    return fail(fmt::format("{}: inputs ({}) vs ({})", at, fmt::join(names_of(ga, na.inputs), ", "),
                            fmt::join(names_of(gb, nb.inputs), ", ")));
  }
  if (names_of(ga, na.outputs) != names_of(gb, nb.outputs)) {
    return fail(fmt::format("{}: outputs ({}) vs ({})", at,
                            fmt::join(names_of(ga, na.outputs), ", "),
                            fmt::join(names_of(gb, nb.outputs), ", ")));
  }
  if (na.attributes.size() != nb.attributes.size()) {
    return fail(
        fmt::format("{}: {} vs {} attributes", at, na.attributes.size(), nb.attributes.size()));
  }
  for (std::size_t i = 0; i < na.attributes.size(); ++i) {
    const auto& [key_a, value_a] = na.attributes[i];
    const auto& [key_b, value_b] = nb.attributes[i];
    if (key_a != key_b) return fail(fmt::format("{}: attribute '{}' vs '{}'", at, key_a, key_b));
    if (!attributes(value_a, value_b, fmt::format("{}: attribute '{}'", at, key_a))) return false;
  }
  return true;
}

bool Comparer::graphs(const Graph& a, const Graph& b, const std::string& where) {
  std::string at = fmt::format("{}graph '{}'", where.empty() ? "" : where + ", ", a.name);
  if (a.name != b.name) return fail(fmt::format("{} vs graph '{}'", at, b.name));
  if (a.doc_string != b.doc_string) return fail(at + ": doc strings differ");
  if (a.opset_imports != b.opset_imports) return fail(at + ": opset imports differ");
  if (a.ir_version != b.ir_version) {
    return fail(fmt::format("{}: IR version {} vs {}", at, a.ir_version, b.ir_version));
  }
  if (a.producer_name != b.producer_name) return fail(at + ": producer names differ");
  if (names_of(a, a.inputs()) != names_of(b, b.inputs())) {
    return fail(fmt::format("{}: inputs ({}) vs ({})", at, fmt::join(names_of(a, a.inputs()), ", "),
                            fmt::join(names_of(b, b.inputs()), ", ")));
  }
  if (names_of(a, a.outputs()) != names_of(b, b.outputs())) {
    return fail(fmt::format("{}: outputs ({}) vs ({})", at,
                            fmt::join(names_of(a, a.outputs()), ", "),
                            fmt::join(names_of(b, b.outputs()), ", ")));
  }
  std::set<std::string> names_a = live_value_names(a);
  std::set<std::string> names_b = live_value_names(b);
  for (const std::string& name : names_a) {
    if (!names_b.count(name))
      return fail(fmt::format("{}: value '{}' only in the first", at, name));
  }
  for (const std::string& name : names_b) {
    if (!names_a.count(name))
      return fail(fmt::format("{}: value '{}' only in the second", at, name));
  }
  for (const std::string& name : names_a) {
    if (!values(a, a.value(*a.find_value(name)), b, b.value(*b.find_value(name)), at)) {
      return false;
    }
  }
  std::vector<NodeId> order_a = comparison_order(a);
  std::vector<NodeId> order_b = comparison_order(b);
  if (order_a.size() != order_b.size()) {
    return fail(fmt::format("{}: {} vs {} nodes", at, order_a.size(), order_b.size()));
  }
  for (std::size_t i = 0; i < order_a.size(); ++i) {
    if (!nodes(a, order_a[i], b, order_b[i], at)) return false;
  }
  return true;
}

}  // namespace

bool graphs_equal(const Graph& a, const Graph& b, std::string* difference) {
  return Comparer(difference).graphs(a, b, "");
}

}  // namespace cleave
