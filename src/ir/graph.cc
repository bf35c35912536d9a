// Graph, values, attributes and tensors: construction, indexing and topological order.
#include "ir/graph.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <limits>
#include <queue>
#include <set>

#include "support/topological_order.h"

namespace cleave {

namespace {

struct DtypeInfo {
  DataType type;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DtypeInfo, 17> kDtypes = {{
    {DataType::kUndefined, "?", 0},
    {DataType::kFloat, "f32", 4},
    {DataType::kUInt8, "u8", 1},
    {DataType::kInt8, "i8", 1},
    {DataType::kUInt16, "u16", 2},
    {DataType::kInt16, "i16", 2},
    {DataType::kInt32, "i32", 4},
    {DataType::kInt64, "i64", 8},
    {DataType::kString, "str", 0},
    {DataType::kBool, "bool", 1},
    {DataType::kFloat16, "f16", 2},
    {DataType::kDouble, "f64", 8},
    {DataType::kUInt32, "u32", 4},
    {DataType::kUInt64, "u64", 8},
    {DataType::kComplex64, "c64", 8},
    {DataType::kComplex128, "c128", 16},
    {DataType::kBFloat16, "bf16", 2},
}};

const DtypeInfo& info(DataType type) {
  auto index = static_cast<std::size_t>(type);
  if (index >= kDtypes.size()) return kDtypes[0];
  return kDtypes[index];
}

int64_t checked_product(std::span<const int64_t> sizes, const char* what) {
  int64_t product = 1;
  for (int64_t size : sizes) {
    if (size < 0) throw Error(fmt::format("{}: negative dimension {}", what, size));
    if (size != 0 && product > std::numeric_limits<int64_t>::max() / size) {
      throw Error(fmt::format("{}: element count overflows int64", what));
    }
    product *= size;
  }
  return product;
}

bool graph_pointers_equal(const std::shared_ptr<const Graph>& a,
                          const std::shared_ptr<const Graph>& b) {
  // Sub-graphs compare by identity here; structural comparison lives with the text form.
  return a == b;
}

// Sorted and deduplicated in place: a node has few neighbours, and a std::set allocated one
// tree node per neighbour, on every call (the summary and the orders call these per node).
std::vector<NodeId> sorted_unique(std::vector<NodeId> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

std::size_t element_size(DataType type) {
  return info(type).size;
}
std::string_view dtype_name(DataType type) {
  return info(type).name;
}

std::optional<DataType> parse_dtype_name(std::string_view name) {
  for (const auto& entry : kDtypes) {
    if (entry.name == name) return entry.type;
  }
  return std::nullopt;
}

Shape Shape::of(std::initializer_list<int64_t> sizes) {
  return of(std::span<const int64_t>(sizes.begin(), sizes.size()));
}

Shape Shape::of(std::span<const int64_t> sizes) {
  Shape shape;
  shape.rank_known = true;
  for (int64_t size : sizes) shape.dims.push_back(Dim::known(size));
  return shape;
}

bool Shape::is_static() const {
  return rank_known &&
         std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.is_known(); });
}

int64_t Shape::element_count() const {
  if (!is_static()) throw Error("element count of a shape that is not fully known");
  auto all = sizes();
  return checked_product(all, "shape");
}

std::vector<int64_t> Shape::sizes() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.size);
  return out;
}

int64_t TensorData::element_count() const {
  return checked_product(dims, "tensor");
}

bool TensorData::operator==(const TensorData& other) const {
  if (dtype != other.dtype || dims != other.dims) return false;
  auto bytes_equal = (bytes == other.bytes) || (bytes && other.bytes && *bytes == *other.bytes);
  auto strings_equal =
      (strings == other.strings) || (strings && other.strings && *strings == *other.strings);
  return bytes_equal && strings_equal;
}

Attribute Attribute::of_float(float v) {
  Attribute a;
  a.kind = AttributeKind::kFloat;
  a.f = v;
  return a;
}
Attribute Attribute::of_int(int64_t v) {
  Attribute a;
  a.kind = AttributeKind::kInt;
  a.i = v;
  return a;
}
Attribute Attribute::of_string(std::string v) {
  Attribute a;
  a.kind = AttributeKind::kString;
  a.s = std::move(v);
  return a;
}
Attribute Attribute::of_floats(std::vector<float> v) {
  Attribute a;
  a.kind = AttributeKind::kFloats;
  a.floats = std::move(v);
  return a;
}
Attribute Attribute::of_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = AttributeKind::kInts;
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::of_strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = AttributeKind::kStrings;
  a.strings = std::move(v);
  return a;
}
Attribute Attribute::of_tensor(TensorData v) {
  Attribute a;
  a.kind = AttributeKind::kTensor;
  a.t = std::move(v);
  return a;
}
Attribute Attribute::of_graph(std::shared_ptr<const Graph> v) {
  Attribute a;
  a.kind = AttributeKind::kGraph;
  a.g = std::move(v);
  return a;
}

std::string_view Attribute::kind_name() const {
  switch (kind) {
    case AttributeKind::kFloat:
      return "float";
    case AttributeKind::kInt:
      return "int";
    case AttributeKind::kString:
      return "string";
    case AttributeKind::kTensor:
      return "tensor";
    case AttributeKind::kGraph:
      return "graph";
    case AttributeKind::kSparseTensor:
      return "sparse_tensor";
    case AttributeKind::kTypeProto:
      return "type_proto";
    case AttributeKind::kFloats:
      return "floats";
    case AttributeKind::kInts:
      return "ints";
    case AttributeKind::kStrings:
      return "strings";
    case AttributeKind::kTensors:
      return "tensors";
    case AttributeKind::kGraphs:
      return "graphs";
    case AttributeKind::kSparseTensors:
      return "sparse_tensors";
    case AttributeKind::kTypeProtos:
      return "type_protos";
  }
  return "unknown";
}

bool Attribute::operator==(const Attribute& other) const {
  if (kind != other.kind) return false;
  switch (kind) {
    case AttributeKind::kFloat:
      // Bitwise so that NaN attributes still round-trip as equal.
      return std::memcmp(&f, &other.f, sizeof f) == 0;
    case AttributeKind::kInt:
      return i == other.i;
    case AttributeKind::kString:
      return s == other.s;
    case AttributeKind::kTensor:
      return t == other.t;
    case AttributeKind::kGraph:
      return graph_pointers_equal(g, other.g);
    case AttributeKind::kSparseTensor:
    case AttributeKind::kTypeProto:
      return opaque == other.opaque;
    case AttributeKind::kFloats:
      return floats.size() == other.floats.size() &&
             (floats.empty() ||
              std::memcmp(floats.data(), other.floats.data(), floats.size() * sizeof(float)) == 0);
    case AttributeKind::kInts:
      return ints == other.ints;
    case AttributeKind::kStrings:
      return strings == other.strings;
    case AttributeKind::kTensors:
      return tensors == other.tensors;
    case AttributeKind::kGraphs:
      return graphs.size() == other.graphs.size() &&
             std::equal(graphs.begin(), graphs.end(), other.graphs.begin(), graph_pointers_equal);
    case AttributeKind::kSparseTensors:
    case AttributeKind::kTypeProtos:
      return opaques == other.opaques;
  }
  return false;
}

const Attribute* Node::attribute(std::string_view key) const {
  for (const auto& [name, value] : attributes) {
    if (name == key) return &value;
  }
  return nullptr;
}

int64_t Node::int_attribute(std::string_view key, int64_t fallback) const {
  const Attribute* a = attribute(key);
  if (!a) return fallback;
  if (a->kind != AttributeKind::kInt) {
    throw Error(fmt::format("node '{}' ({}): attribute '{}' should be an int, is {}", name, op_type,
                            key, a->kind_name()));
  }
  return a->i;
}

float Node::float_attribute(std::string_view key, float fallback) const {
  const Attribute* a = attribute(key);
  if (!a) return fallback;
  if (a->kind == AttributeKind::kInt) return static_cast<float>(a->i);
  if (a->kind != AttributeKind::kFloat) {
    throw Error(fmt::format("node '{}' ({}): attribute '{}' should be a float, is {}", name,
                            op_type, key, a->kind_name()));
  }
  return a->f;
}

std::string Node::string_attribute(std::string_view key, std::string fallback) const {
  const Attribute* a = attribute(key);
  if (!a) return fallback;
  if (a->kind != AttributeKind::kString) {
    throw Error(fmt::format("node '{}' ({}): attribute '{}' should be a string, is {}", name,
                            op_type, key, a->kind_name()));
  }
  return a->s;
}

std::vector<int64_t> Node::ints_attribute(std::string_view key) const {
  const Attribute* a = attribute(key);
  if (!a) return {};
  if (a->kind != AttributeKind::kInts) {
    throw Error(fmt::format("node '{}' ({}): attribute '{}' should be a list of ints, is {}", name,
                            op_type, key, a->kind_name()));
  }
  return a->ints;
}

void Node::set_attribute(std::string key, Attribute value) {
  for (auto& [name, existing] : attributes) {
    if (name == key) {
      existing = std::move(value);
      return;
    }
  }
  attributes.emplace_back(std::move(key), std::move(value));
}

ValueId Graph::add_value(std::string name, DataType dtype, Shape shape) {
  auto id = static_cast<ValueId>(values_.size());
  if (!value_by_name_.try_emplace(name, id).second) {
    throw Error(fmt::format("graph '{}': value '{}' is defined twice", this->name, name));
  }
  Value value;
  value.name = std::move(name);
  value.dtype = dtype;
  value.shape = std::move(shape);
  values_.push_back(std::move(value));
  consumers_.emplace_back();
  return id;
}

ValueId Graph::add_input(std::string name, DataType dtype, Shape shape) {
  ValueId id = add_value(std::move(name), dtype, std::move(shape));
  values_[id].is_graph_input = true;
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_initializer(std::string name, TensorData data) {
  ValueId id = add_value(std::move(name), data.dtype, Shape::of(data.dims));
  values_[id].initializer = std::move(data);
  return id;
}

void Graph::mark_output(ValueId value) {
  values_.at(value).is_graph_output = true;
  outputs_.push_back(value);
}

NodeId Graph::add_node(std::string op_type, std::vector<ValueId> inputs,
                       std::vector<ValueId> outputs,
                       std::vector<std::pair<std::string, Attribute>> attributes, std::string name,
                       std::string domain) {
  auto id = static_cast<NodeId>(nodes_.size());
  for (ValueId input : inputs) {
    if (input != kNoValue && (input < 0 || static_cast<std::size_t>(input) >= values_.size())) {
      throw Error(fmt::format("node '{}' ({}): input id {} does not exist", name, op_type, input));
    }
  }
  for (ValueId output : outputs) {
    Value& v = values_.at(output);
    if (v.producer >= 0 || v.initializer || v.is_graph_input) {
      throw Error(
          fmt::format("node '{}' ({}): output '{}' is already defined", name, op_type, v.name));
    }
  }
  for (ValueId output : outputs) values_[output].producer = id;
  for (ValueId input : inputs) {
    if (input != kNoValue) consumers_[input].push_back(id);
  }
  Node node;
  node.name = std::move(name);
  node.op_type = std::move(op_type);
  node.domain = std::move(domain);
  node.attributes = std::move(attributes);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  nodes_.push_back(std::move(node));
  return id;
}

NodeId Graph::add_op(std::string op_type, std::vector<ValueId> inputs, int output_count,
                     std::vector<std::pair<std::string, Attribute>> attributes, std::string name) {
  if (name.empty()) name = fmt::format("{}_{}", op_type, nodes_.size());
  std::vector<ValueId> outputs;
  for (int i = 0; i < output_count; ++i) {
    std::string value_name = output_count == 1 ? name : fmt::format("{}_{}", name, i);
    while (value_by_name_.count(value_name)) value_name += "_";
    outputs.push_back(add_value(std::move(value_name)));
  }
  return add_node(std::move(op_type), std::move(inputs), std::move(outputs), std::move(attributes),
                  std::move(name));
}

void Graph::remove_node(NodeId id) {
  Node& n = nodes_.at(id);
  if (n.removed) return;
  for (ValueId input : n.inputs) {
    if (input == kNoValue) continue;
    auto& uses = consumers_[input];
    auto it = std::find(uses.begin(), uses.end(), id);
    if (it != uses.end()) uses.erase(it);
  }
  for (ValueId output : n.outputs) values_[output].producer = -1;
  n.removed = true;
  ++removed_count_;
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  if (from == to) return;
  for (NodeId user : std::vector<NodeId>(consumers_.at(from))) {
    Node& n = nodes_[user];
    for (ValueId& input : n.inputs) {
      if (input == from) {
        input = to;
        consumers_[to].push_back(user);
      }
    }
  }
  consumers_[from].clear();
  for (ValueId& output : outputs_) {
    if (output == from) {
      output = to;
      values_[from].is_graph_output = false;
      values_[to].is_graph_output = true;
    }
  }
}

void Graph::set_node_input(NodeId id, std::size_t slot, ValueId value) {
  Node& n = nodes_.at(id);
  ValueId old = n.inputs.at(slot);
  if (old != kNoValue) {
    auto& uses = consumers_[old];
    auto it = std::find(uses.begin(), uses.end(), id);
    if (it != uses.end()) uses.erase(it);
  }
  n.inputs[slot] = value;
  if (value != kNoValue) consumers_.at(value).push_back(id);
}

std::vector<NodeId> Graph::node_ids() const {
  std::vector<NodeId> ids;
  ids.reserve(node_count());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].removed) ids.push_back(static_cast<NodeId>(i));
  }
  return ids;
}

std::optional<ValueId> Graph::find_value(std::string_view name) const {
  auto it = value_by_name_.find(name);
  if (it == value_by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeId> Graph::find_node(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].removed && nodes_[i].name == name) return static_cast<NodeId>(i);
  }
  return std::nullopt;
}

std::vector<ValueId> Graph::initializers() const {
  std::vector<ValueId> ids;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (values_[i].initializer) ids.push_back(static_cast<ValueId>(i));
  }
  return ids;
}

std::vector<NodeId> Graph::predecessors(NodeId id) const {
  std::vector<NodeId> found;
  for (ValueId input : nodes_.at(id).inputs) {
    if (input != kNoValue && values_[input].producer >= 0) found.push_back(values_[input].producer);
  }
  return sorted_unique(std::move(found));
}

std::vector<NodeId> Graph::successors(NodeId id) const {
  std::vector<NodeId> found;
  for (ValueId output : nodes_.at(id).outputs) {
    const auto& users = consumers_[output];
    found.insert(found.end(), users.begin(), users.end());
  }
  return sorted_unique(std::move(found));
}

std::vector<NodeId> Graph::topological_order() const {
  std::vector<std::vector<int>> next(nodes_.size());
  std::vector<bool> live(nodes_.size(), false);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].removed) continue;
    live[i] = true;
    next[i] = successors(static_cast<NodeId>(i));
  }
  std::vector<int> order = cleave::topological_order(next, {}, live);
  if (order.size() != node_count()) {
    std::vector<std::vector<int>> previous(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      for (int successor : next[i]) previous[successor].push_back(static_cast<int>(i));
    }
    const std::vector<int> cycle = find_cycle(previous, order, live);
    throw Error(fmt::format("graph '{}' has a cycle through node {}", name,
                            describe(static_cast<NodeId>(cycle.empty() ? 0 : cycle.front()))));
  }
  return {order.begin(), order.end()};
}

std::string Graph::describe(NodeId id) const {
  const Node& n = nodes_.at(id);
  if (n.name.empty()) return fmt::format("#{} ({})", id, n.op_type);
  return fmt::format("'{}' ({})", n.name, n.op_type);
}

void Graph::set_inputs(std::vector<ValueId> inputs) {
  for (ValueId v : inputs_) values_[v].is_graph_input = false;
  inputs_ = std::move(inputs);
  for (ValueId v : inputs_) values_.at(v).is_graph_input = true;
}

void Graph::set_outputs(std::vector<ValueId> outputs) {
  for (ValueId v : outputs_) values_[v].is_graph_output = false;
  outputs_ = std::move(outputs);
  for (ValueId v : outputs_) values_.at(v).is_graph_output = true;
}

SubgraphView::SubgraphView(const Graph& graph, std::vector<NodeId> nodes)
    : graph_(&graph), nodes_(std::move(nodes)), member_(graph.node_capacity(), false) {
  for (NodeId id : nodes_) {
    if (id < 0 || static_cast<std::size_t>(id) >= member_.size() || graph.node(id).removed) {
      throw Error(fmt::format("sub-graph of '{}': node id {} does not exist", graph.name, id));
    }
    member_[id] = true;
  }
}

bool SubgraphView::contains(NodeId node) const {
  return node >= 0 && static_cast<std::size_t>(node) < member_.size() && member_[node];
}

std::vector<ValueId> SubgraphView::boundary_inputs() const {
  std::vector<ValueId> found;
  std::set<ValueId> seen;
  for (NodeId id : nodes_) {
    for (ValueId input : graph_->node(id).inputs) {
      if (input == kNoValue || graph_->value(input).initializer) continue;
      if (contains(graph_->value(input).producer)) continue;
      if (seen.insert(input).second) found.push_back(input);
    }
  }
  return found;
}

std::vector<ValueId> SubgraphView::boundary_outputs() const {
  std::vector<ValueId> found;
  for (NodeId id : nodes_) {
    for (ValueId output : graph_->node(id).outputs) {
      const Value& v = graph_->value(output);
      bool escapes = v.is_graph_output;
      for (NodeId user : graph_->consumers(output)) escapes = escapes || !contains(user);
      if (escapes) found.push_back(output);
    }
  }
  return found;
}

std::vector<ValueId> SubgraphView::initializers() const {
  std::vector<ValueId> found;
  std::set<ValueId> seen;
  for (NodeId id : nodes_) {
    for (ValueId input : graph_->node(id).inputs) {
      if (input != kNoValue && graph_->value(input).initializer && seen.insert(input).second) {
        found.push_back(input);
      }
    }
  }
  return found;
}

}  // namespace cleave
