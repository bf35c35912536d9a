// The dataflow graph every pass, planner and runtime of cleave works on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "support/error.h"

namespace cleave {

/// Element types, numbered as ONNX's TensorProto.DataType so conversion is a cast.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

/// Size in bytes of one element; 0 for strings and undefined.
std::size_t element_size(DataType type);
/// Short name used by the text form: f32, i64, bool, ...
std::string_view dtype_name(DataType type);
std::optional<DataType> parse_dtype_name(std::string_view name);

/// One dimension: a known size (>= 0), a named symbol ("N", "batch"), or unknown.
struct Dim {
  int64_t size = -1;
  std::string symbol;

  static Dim known(int64_t size) { return Dim{size, {}}; }
  static Dim named(std::string symbol) { return Dim{-1, std::move(symbol)}; }
  static Dim unknown() { return Dim{}; }
  bool is_known() const { return size >= 0; }
  bool operator==(const Dim&) const = default;
};

/// A static shape; `rank_known == false` means nothing is known, not even the rank.
struct Shape {
  bool rank_known = false;
  std::vector<Dim> dims;

  Shape() = default;
  static Shape unknown_rank() { return Shape(); }
  static Shape of(std::initializer_list<int64_t> sizes);
  static Shape of(std::span<const int64_t> sizes);

  std::size_t rank() const { return dims.size(); }
  bool is_static() const;
  /// Product of the dims; throws Error when a dim is not known or the product overflows int64.
  int64_t element_count() const;
  std::vector<int64_t> sizes() const;  ///< Requires is_static().
  bool operator==(const Shape&) const = default;
};

/// A constant tensor. The bytes live out of line and are shared, so copying graphs stays cheap.
struct TensorData {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::shared_ptr<const std::vector<std::byte>> bytes;      ///< Null: shape only, no data.
  std::shared_ptr<const std::vector<std::string>> strings;  ///< For kString tensors.

  int64_t element_count() const;
  bool has_data() const { return bytes != nullptr || strings != nullptr; }
  template <typename T>
  std::span<const T> as() const {
    if (!bytes) return {};
    return {reinterpret_cast<const T*>(bytes->data()), bytes->size() / sizeof(T)};
  }
  template <typename T>
  static TensorData from(DataType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
    auto raw = std::make_shared<std::vector<std::byte>>(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(raw->data(), values.data(), raw->size());
    return TensorData{dtype, std::move(dims), std::move(raw), nullptr};
  }
  bool operator==(const TensorData& other) const;
};

class Graph;

/// The kinds of attribute value ONNX has; sparse tensors and type protos stay serialized.
enum class AttributeKind {
  kFloat,
  kInt,
  kString,
  kTensor,
  kGraph,
  kSparseTensor,
  kTypeProto,
  kFloats,
  kInts,
  kStrings,
  kTensors,
  kGraphs,
  kSparseTensors,
  kTypeProtos,
};

/// Serialized protobuf bytes of an attribute cleave does not interpret.
struct OpaqueProto {
  std::string serialized;
  bool operator==(const OpaqueProto&) const = default;
};

struct Attribute {
  AttributeKind kind = AttributeKind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  TensorData t;
  std::shared_ptr<const Graph> g;
  OpaqueProto opaque;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorData> tensors;
  std::vector<std::shared_ptr<const Graph>> graphs;
  std::vector<OpaqueProto> opaques;

  static Attribute of_float(float v);
  static Attribute of_int(int64_t v);
  static Attribute of_string(std::string v);
  static Attribute of_floats(std::vector<float> v);
  static Attribute of_ints(std::vector<int64_t> v);
  static Attribute of_strings(std::vector<std::string> v);
  static Attribute of_tensor(TensorData v);
  static Attribute of_graph(std::shared_ptr<const Graph> v);
  std::string_view kind_name() const;
  bool operator==(const Attribute& other) const;
};

using NodeId = int32_t;
using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;  ///< An omitted optional input.

/// A named edge of the graph: produced by one node, a graph input, or an initializer.
struct Value {
  std::string name;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  NodeId producer = -1;  ///< -1 for graph inputs and initializers.
  std::optional<TensorData> initializer;
  bool is_graph_input = false;
  bool is_graph_output = false;
  /// Serialized onnx TypeProto of a value that is not a plain tensor (sequence, map, optional,
  /// sparse tensor); dtype and shape then stay unknown. Kept so that import/export round-trips.
  std::optional<OpaqueProto> opaque_type;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  ///< "" is the standard ai.onnx domain.
  std::vector<std::pair<std::string, Attribute>> attributes;  ///< In model order.
  std::vector<ValueId> inputs;  ///< kNoValue for an omitted optional input.
  std::vector<ValueId> outputs;
  std::string doc_string;
  bool removed = false;  ///< Tombstone: ids stay stable when passes delete nodes.

  const Attribute* attribute(std::string_view key) const;
  int64_t int_attribute(std::string_view key, int64_t fallback) const;
  float float_attribute(std::string_view key, float fallback) const;
  std::string string_attribute(std::string_view key, std::string fallback) const;
  std::vector<int64_t> ints_attribute(std::string_view key) const;
  void set_attribute(std::string key, Attribute value);
};

/// The dataflow graph: nodes and values with stable integer ids.
///
/// Node and value ids never change; removing a node leaves a tombstone. Names are kept for
/// messages and export. Mutate only through the member functions, which keep the
/// producer/consumer index consistent.
class Graph {
 public:
  std::string name = "main";
  std::map<std::string, int64_t> opset_imports = {{"", 17}};  ///< domain -> version
  int64_t ir_version = 8;
  std::string producer_name = "cleave";
  std::string doc_string;
  /// What the model file says about itself besides its graph (ModelProto's domain,
  /// model_version, doc_string and metadata_props), kept for export and for sessions.
  struct ModelMetadata {
    std::string domain;
    int64_t version = 0;
    std::string description;
    std::map<std::string, std::string> properties;
  };
  ModelMetadata metadata;

  /// Adds a value; the name must be new. Throws Error on a duplicate name.
  ValueId add_value(std::string name, DataType dtype = DataType::kUndefined, Shape shape = {});
  ValueId add_input(std::string name, DataType dtype, Shape shape);
  ValueId add_initializer(std::string name, TensorData data);
  void mark_output(ValueId value);
  /// Adds a node; every output must not already have a producer.
  NodeId add_node(std::string op_type, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                  std::vector<std::pair<std::string, Attribute>> attributes = {},
                  std::string name = {}, std::string domain = {});
  /// Convenience: creates fresh output values named after the node.
  NodeId add_op(std::string op_type, std::vector<ValueId> inputs, int output_count = 1,
                std::vector<std::pair<std::string, Attribute>> attributes = {},
                std::string name = {});
  void remove_node(NodeId node);
  /// Rewires every use of `from` (node inputs, graph outputs) to `to`.
  void replace_all_uses(ValueId from, ValueId to);
  void set_node_input(NodeId node, std::size_t slot, ValueId value);

  const Node& node(NodeId id) const { return nodes_.at(id); }
  Node& node(NodeId id) { return nodes_.at(id); }
  const Value& value(ValueId id) const { return values_.at(id); }
  Value& value(ValueId id) { return values_.at(id); }
  std::size_t node_capacity() const { return nodes_.size(); }  ///< Including tombstones.
  std::size_t value_capacity() const { return values_.size(); }
  std::size_t node_count() const { return nodes_.size() - removed_count_; }
  std::vector<NodeId> node_ids() const;  ///< Live nodes in id order.

  std::optional<ValueId> find_value(std::string_view name) const;
  std::optional<NodeId> find_node(std::string_view name) const;
  const std::vector<ValueId>& inputs() const { return inputs_; }  ///< Excludes initializers.
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId> initializers() const;
  const std::vector<NodeId>& consumers(ValueId value) const { return consumers_.at(value); }

  /// Nodes whose outputs this node reads (deduplicated, id order).
  std::vector<NodeId> predecessors(NodeId node) const;
  /// Nodes reading this node's outputs (deduplicated, id order).
  std::vector<NodeId> successors(NodeId node) const;
  /// Live nodes in a topological order (stable: ties broken by id). Throws Error on a cycle,
  /// naming a node on it.
  std::vector<NodeId> topological_order() const;
  /// A node's display name for messages: its name, or op type and id when unnamed.
  std::string describe(NodeId node) const;

  void set_inputs(std::vector<ValueId> inputs);
  void set_outputs(std::vector<ValueId> outputs);

 private:
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::vector<std::vector<NodeId>> consumers_;  // per value, with multiplicity
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  /// Hashed: the importer looks every name up, and an ordered map's string compares were a
  /// tenth of inspecting a 200k-node graph. Heterogeneous, so a string_view finds a name.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept {
      return std::hash<std::string_view>{}(name);
    }
  };
  std::unordered_map<std::string, ValueId, NameHash, std::equal_to<>> value_by_name_;
  std::size_t removed_count_ = 0;
};

/// A read-only selection of nodes of a graph: what a sub-model, a cluster or a worker holds.
class SubgraphView {
 public:
  SubgraphView(const Graph& graph, std::vector<NodeId> nodes);
  const Graph& graph() const { return *graph_; }
  const std::vector<NodeId>& nodes() const { return nodes_; }
  bool contains(NodeId node) const;
  /// Values read by the selection but produced outside it (graph inputs, other nodes);
  /// initializers are listed separately.
  std::vector<ValueId> boundary_inputs() const;
  /// Values the selection produces that are read outside it or are graph outputs.
  std::vector<ValueId> boundary_outputs() const;
  std::vector<ValueId> initializers() const;

 private:
  const Graph* graph_;
  std::vector<NodeId> nodes_;
  std::vector<bool> member_;
};

}  // namespace cleave
