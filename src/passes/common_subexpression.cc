// Common-subexpression elimination by hashing each node's op, attributes and input values.
#include "passes/common_subexpression.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace cleave {

namespace {

// Ops whose two runs on the same inputs may differ, so two such nodes are not one.
bool is_nondeterministic(std::string_view op) {
  static constexpr std::array<std::string_view, 7> kOps = {
      "RandomNormal",      "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial",   "Bernoulli",
      "Dropout",  // Identity removal has already dropped the inference-mode ones.
  };
  return std::find(kOps.begin(), kOps.end(), op) != kOps.end();
}

// Custom domains may hold stateful ops; only those whose ops are known pure are merged.
bool is_known_domain(std::string_view domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml" ||
         domain == "com.microsoft";
}

bool may_merge(const Node& node) {
  if (!is_known_domain(node.domain) || is_nondeterministic(node.op_type)) return false;
  if (node.inputs.empty() && node.op_type != "Constant") return false;
  for (const auto& [key, attribute] : node.attributes) {
    if (attribute.kind == AttributeKind::kGraph || attribute.kind == AttributeKind::kGraphs)
      return false;
  }
  return true;
}

void append_tensor(std::string& key, const TensorData& tensor) {
  fmt::format_to(std::back_inserter(key), "{}:{}:", static_cast<int>(tensor.dtype),
                 fmt::join(tensor.dims, ","));
  if (tensor.bytes) {
    std::string_view raw(reinterpret_cast<const char*>(tensor.bytes->data()), tensor.bytes->size());
    fmt::format_to(std::back_inserter(key), "{}", std::hash<std::string_view>{}(raw));
  }
  if (tensor.strings) key += fmt::format("s{}", fmt::join(*tensor.strings, "\x1f"));
}

// A digest of the attributes, sorted by name: equal attributes give equal digests, and
// candidates with equal digests are compared exactly before merging (tensor contents are hashed).
void append_attributes(std::string& key, const Node& node) {
  std::vector<const std::pair<std::string, Attribute>*> sorted;
  for (const auto& entry : node.attributes) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (const auto* entry : sorted) {
    const Attribute& a = entry->second;
    fmt::format_to(std::back_inserter(key), "|{}={}:{}:{}:{}:[{}]:[{}]:", entry->first,
                   static_cast<int>(a.kind), std::bit_cast<uint32_t>(a.f), a.i, a.s,
                   fmt::join(a.ints, ","), a.floats.size());
    for (float f : a.floats)
      fmt::format_to(std::back_inserter(key), "{},", std::bit_cast<uint32_t>(f));
    for (const std::string& s : a.strings) key += s + "\x1f";
    if (a.kind == AttributeKind::kTensor) append_tensor(key, a.t);
    for (const TensorData& t : a.tensors) append_tensor(key, t);
    key += std::to_string(std::hash<std::string>{}(a.opaque.serialized));
    for (const OpaqueProto& p : a.opaques)
      key += std::to_string(std::hash<std::string>{}(p.serialized));
  }
}

bool same_attributes(const Node& a, const Node& b) {
  if (a.attributes.size() != b.attributes.size()) return false;
  for (const auto& [name, value] : a.attributes) {
    const Attribute* other = b.attribute(name);
    if (!other || !(*other == value)) return false;
  }
  return true;
}

// Whether renaming or deleting any output of `node` would break a name someone relies on.
bool has_pinned_output(const Graph& graph, const Node& node,
                       const std::vector<bool>& read_by_bodies) {
  for (ValueId out : node.outputs) {
    if (out != kNoValue && (graph.value(out).is_graph_output || read_by_bodies[out])) return true;
  }
  return false;
}

bool same_output_slots(const Node& a, const Node& b) {
  if (a.outputs.size() != b.outputs.size()) return false;
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    if ((a.outputs[i] == kNoValue) != (b.outputs[i] == kNoValue)) return false;
  }
  return true;
}

// Deletes `gone` and moves the readers of its outputs to `kept`'s.
void merge_node(Graph& graph, NodeId gone, NodeId kept) {
  std::vector<ValueId> from = graph.node(gone).outputs;
  const std::vector<ValueId>& to = graph.node(kept).outputs;
  graph.remove_node(gone);
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] != kNoValue) graph.replace_all_uses(from[i], to[i]);
  }
}

}  // namespace

PassResult eliminate_common_subexpressions(Graph& graph) {
  PassResult result{"common-subexpression elimination", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  // Keys name inputs by class: when a later duplicate replaces an already-visited node, readers
  // visited in between still hold the old node's outputs in their keys.
  std::vector<ValueId> canonical(graph.value_capacity());
  for (std::size_t v = 0; v < canonical.size(); ++v) canonical[v] = static_cast<ValueId>(v);
  std::unordered_map<std::string, std::vector<NodeId>> seen;
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (!may_merge(node)) continue;
    std::string key =
        fmt::format("{}\x1f{}\x1f{}(", node.domain, node.op_type, node.outputs.size());
    for (ValueId in : node.inputs) {
      fmt::format_to(std::back_inserter(key), "{},", in == kNoValue ? in : canonical[in]);
    }
    append_attributes(key, node);
    std::vector<NodeId>& candidates = seen[key];
    auto match = std::find_if(candidates.begin(), candidates.end(), [&](NodeId other) {
      const Node& kept = graph.node(other);
      return same_output_slots(kept, node) && same_attributes(kept, node);
    });
    if (match == candidates.end()) {
      candidates.push_back(id);
      continue;
    }
    NodeId kept = *match;
    if (!has_pinned_output(graph, node, read_by_bodies)) {
      for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] != kNoValue)
          canonical[node.outputs[i]] = canonical[graph.node(kept).outputs[i]];
      }
      merge_node(graph, id, kept);
      result.add("nodes merged");
    } else if (!has_pinned_output(graph, graph.node(kept), read_by_bodies)) {
      // The duplicate writes a graph output: it stays, under its name, and the earlier one goes.
      const Node& old = graph.node(kept);
      for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] != kNoValue) canonical[node.outputs[i]] = canonical[old.outputs[i]];
      }
      merge_node(graph, kept, id);
      *match = id;
      result.add("nodes merged");
    } else {
      result.add("kept for graph output names");
    }
  }
  return result;
}

}  // namespace cleave
