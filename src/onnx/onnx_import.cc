// The ONNX importer: checks a ModelProto's structure and converts it into a cleave Graph.
#include "onnx/onnx_import.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/scope.h"
#include "onnx/embedded_weights.h"
#include "onnx/onnx_detail.h"
#include "onnx/schema_check.h"
#include "onnx/shape_inference.h"

namespace cleave {

namespace {

namespace fs = std::filesystem;

using onnx_detail::apply_type;
using onnx_detail::attribute_kind;
using onnx_detail::decode_tensor;
using onnx_detail::format_shape;
using onnx_detail::kind_name;
using onnx_detail::kMaxModelBytes;
using onnx_detail::known_attributes;

std::string node_label(const onnx::NodeProto& node, int index) {
  if (node.name().empty()) return fmt::format("#{} ({})", index, node.op_type());
  return fmt::format("'{}' ({})", node.name(), node.op_type());
}

bool is_standard_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// Shape inference only adds types; anything else means the copy cannot be matched up.
bool same_nodes(const onnx::GraphProto& a, const onnx::GraphProto& b) {
  if (a.node_size() != b.node_size()) return false;
  for (int i = 0; i < a.node_size(); ++i) {
    if (a.node(i).op_type() != b.node(i).op_type() ||
        a.node(i).attribute_size() != b.node(i).attribute_size()) {
      return false;
    }
  }
  return true;
}

// Names visible from a body graph: the graphs enclosing it, innermost first.
struct Scope {
  const Graph* graph;
  const Scope* parent;

  bool defines(std::string_view name) const {
    for (const Scope* scope = this; scope; scope = scope->parent) {
      if (scope->graph->find_value(name)) return true;
    }
    return false;
  }
};

struct ModelInfo {
  std::string origin;
  const ImportOptions& options;
  std::map<std::string, int64_t> opset_imports;
  int64_t ir_version = 0;
  std::string producer_name;
  // Declared shapes and element types that contradict inference, reported after the schema
  // check: a misspelt stride also changes the inferred shape, and the attribute is the cause.
  mutable std::vector<std::string> declared_disagreements;
};

class GraphImporter {
 public:
  GraphImporter(const ModelInfo& model, std::string where, const Scope* outer, int depth)
      : model_(model), where_(std::move(where)), outer_(outer), depth_(depth) {}

  /// `typed`, when given, is the same graph after shape inference: types are read from it.
  std::shared_ptr<Graph> run(const onnx::GraphProto& proto, const onnx::GraphProto* typed);

 private:
  void collect_types(const onnx::GraphProto& proto, const onnx::GraphProto* typed);
  void type_value(ValueId id);
  ValueId resolve_input(const std::string& name, const onnx::NodeProto& node, int index);
  ValueId capture(const std::string& name);
  std::vector<std::pair<std::string, Attribute>> import_attributes(const onnx::NodeProto& node,
                                                                   const onnx::NodeProto* typed,
                                                                   const std::string& label);
  Attribute import_attribute(const onnx::AttributeProto& proto, const onnx::AttributeProto* typed,
                             AttributeKind kind, const std::string& label);
  std::shared_ptr<const Graph> import_body(const onnx::GraphProto& body,
                                           const onnx::GraphProto* typed,
                                           const std::string& attribute, const std::string& label);
  void add_node(const onnx::NodeProto& proto, const onnx::NodeProto* typed, int index);
  std::string unique_name(const std::string& base) const;

  const ModelInfo& model_;
  std::string where_;
  const Scope* outer_;
  int depth_;
  std::shared_ptr<Graph> graph_;
  std::vector<ValueId> produced_;  // The nodes' named outputs, in node and slot order.
  std::size_t next_produced_ = 0;  // The first of them add_node has not taken yet.
  // Keys view the names in the model and its inferred copy, which outlive the import.
  std::unordered_map<std::string_view, const onnx::TypeProto*> types_;
};

std::shared_ptr<Graph> GraphImporter::run(const onnx::GraphProto& proto,
                                          const onnx::GraphProto* typed) {
  if (typed && !same_nodes(proto, *typed)) typed = nullptr;
  graph_ = std::make_shared<Graph>();
  Graph& g = *graph_;
  g.name = proto.name();
  g.doc_string = proto.doc_string();
  g.opset_imports = model_.opset_imports;
  g.ir_version = model_.ir_version;
  g.producer_name = model_.producer_name;
  collect_types(proto, typed);

  if (proto.sparse_initializer_size() > 0) {
    throw Error(fmt::format("{}: sparse initializers are not supported (found '{}')", where_,
                            proto.sparse_initializer(0).values().name()));
  }
  for (const auto& tensor : proto.initializer()) {
    std::string what = fmt::format("{}: initializer '{}'", where_, tensor.name());
    if (tensor.name().empty()) throw Error(fmt::format("{}: an initializer has no name", where_));
    if (g.find_value(tensor.name())) throw Error(what + " is defined twice");
    g.add_initializer(tensor.name(), decode_tensor(tensor, what, model_.options));
  }
  for (const auto& input : proto.input()) {
    if (input.name().empty()) throw Error(fmt::format("{}: a graph input has no name", where_));
    auto existing = g.find_value(input.name());
    if (existing && g.value(*existing).initializer && !g.value(*existing).is_graph_input) {
      g.value(*existing).is_graph_input = true;  // Overridable initializer (IR < 4 style).
      continue;
    }
    if (existing) {
      throw Error(fmt::format("{}: graph input '{}' is listed twice", where_, input.name()));
    }
    type_value(g.add_input(input.name(), DataType::kUndefined, Shape{}));
  }
  // Outputs first, so that nodes may appear in any order; a cycle is reported below. Their ids
  // are kept for add_node: searching each name again took a tenth of a large import.
  produced_.reserve(proto.node_size());
  for (int index = 0; index < proto.node_size(); ++index) {
    const auto& node = proto.node(index);
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      ValueId id = kNoValue;
      try {
        id = g.add_value(output);
      } catch (const Error&) {
        throw Error(fmt::format("{}: node {}: output '{}' is already defined elsewhere", where_,
                                node_label(node, index), output));
      }
      type_value(id);
      produced_.push_back(id);
    }
  }
  for (int index = 0; index < proto.node_size(); ++index) {
    add_node(proto.node(index), typed ? &typed->node(index) : nullptr, index);
  }
  for (const auto& output : proto.output()) {
    if (output.name().empty()) throw Error(fmt::format("{}: a graph output has no name", where_));
    auto id = g.find_value(output.name());
    if (!id && outer_ && outer_->defines(output.name())) id = capture(output.name());
    if (!id) {
      throw Error(
          fmt::format("{}: graph output '{}' is not produced by any node, graph input or "
                      "initializer",
                      where_, output.name()));
    }
    g.mark_output(*id);
  }
  try {
    scoped_topological_order(g);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", where_, e.what()));
  }
  return graph_;
}

void GraphImporter::collect_types(const onnx::GraphProto& proto, const onnx::GraphProto* typed) {
  // Each declaration is checked on its own first (element type, negative dims, overflow), so
  // that a bad one is named as such rather than as a disagreement with inference.
  const auto declare = [&](const onnx::ValueInfoProto& info) {
    if (!info.has_type()) return;
    Value scratch;
    scratch.name = info.name();
    apply_type(scratch, info.type(), where_);
    types_[info.name()] = &info.type();
  };
  // Declared inputs and outputs win over value_info.
  for (const auto& info : proto.value_info()) declare(info);
  for (const auto& info : proto.input()) declare(info);
  for (const auto& info : proto.output()) declare(info);
  if (!typed) return;
  // What inference computed (from the inputs, without the declarations) wins; a declaration
  // that contradicts it is refused, never trusted (inspect and run must see the same shapes).
  const auto take = [&](const onnx::ValueInfoProto& info, const char* kind) {
    if (!info.has_type()) return;
    const auto known = types_.find(info.name());
    if (known == types_.end()) {
      types_[info.name()] = &info.type();
      return;
    }
    const onnx::TypeProto& declared = *known->second;
    const onnx::TypeProto& inferred = info.type();
    if (declared.has_tensor_type() && inferred.has_tensor_type() &&
        declared.tensor_type().elem_type() != 0 && inferred.tensor_type().elem_type() != 0 &&
        declared.tensor_type().elem_type() != inferred.tensor_type().elem_type()) {
      const auto type_of = [](const onnx::TypeProto& type) {
        const int number = type.tensor_type().elem_type();
        return number <= static_cast<int>(DataType::kBFloat16)
                   ? std::string(dtype_name(static_cast<DataType>(number)))
                   : std::to_string(number);
      };
      model_.declared_disagreements.push_back(fmt::format(
          "{}: value '{}': the model declares ({}) element type {}, but shape inference from the "
          "graph's inputs gives {}; expected them to agree (fix or remove the declaration)",
          where_, info.name(), kind, type_of(declared), type_of(inferred)));
      // Typed as inferred meanwhile, so that the schema check does not blame the node first.
      types_[info.name()] = &inferred;
      return;
    }
    if (!inferred.has_tensor_type() || !inferred.tensor_type().has_shape()) return;
    if (declared.has_tensor_type() && declared.tensor_type().has_shape()) {
      const auto& a = declared.tensor_type().shape();
      const auto& b = inferred.tensor_type().shape();
      bool differ = a.dim_size() != b.dim_size();
      for (int d = 0; !differ && d < a.dim_size(); ++d) {
        differ = a.dim(d).has_dim_value() && b.dim(d).has_dim_value() &&
                 a.dim(d).dim_value() != b.dim(d).dim_value();
      }
      if (differ) {
        model_.declared_disagreements.push_back(fmt::format(
            "{}: value '{}': the model declares ({}) shape {}, but shape inference from the "
            "graph's inputs gives {}; expected them to agree (fix or remove the declaration)",
            where_, info.name(), kind, format_shape(a), format_shape(b)));
        return;
      }
    }
    // Keep a declared element type when inference has none.
    if (inferred.tensor_type().elem_type() == 0 && declared.has_tensor_type()) return;
    types_[info.name()] = &inferred;
  };
  for (const auto& info : typed->value_info()) take(info, "value_info");
  for (const auto& info : typed->output()) take(info, "graph output");
}

void GraphImporter::type_value(ValueId id) {
  Value& value = graph_->value(id);
  auto it = types_.find(value.name);
  if (it != types_.end()) apply_type(value, *it->second, where_);
}

ValueId GraphImporter::capture(const std::string& name) {
  ValueId id = graph_->add_value(name);
  type_value(id);
  return id;
}

ValueId GraphImporter::resolve_input(const std::string& name, const onnx::NodeProto& node,
                                     int index) {
  if (name.empty()) return kNoValue;
  if (auto id = graph_->find_value(name)) return *id;
  if (outer_ && outer_->defines(name)) return capture(name);
  throw Error(
      fmt::format("{}: node {}: input '{}' is not produced by any node, graph input or "
                  "initializer",
                  where_, node_label(node, index), name));
}

std::string GraphImporter::unique_name(const std::string& base) const {
  std::string name = base;
  for (int suffix = 1; graph_->find_value(name); ++suffix)
    name = fmt::format("{}_{}", base, suffix);
  return name;
}

void GraphImporter::add_node(const onnx::NodeProto& proto, const onnx::NodeProto* typed,
                             int index) {
  if (proto.op_type().empty()) {
    throw Error(fmt::format("{}: node {}: has no op type", where_, node_label(proto, index)));
  }
  std::vector<ValueId> inputs;
  inputs.reserve(proto.input_size());
  for (const std::string& input : proto.input())
    inputs.push_back(resolve_input(input, proto, index));
  // The label names the node in messages; most nodes have no attributes and need none.
  std::vector<std::pair<std::string, Attribute>> attributes;
  if (proto.attribute_size() > 0) {
    attributes = import_attributes(proto, typed, node_label(proto, index));
  }

  int present = proto.output_size();
  while (present > 0 && proto.output(present - 1).empty()) --present;
  std::vector<ValueId> outputs;
  for (int slot = 0; slot < present; ++slot) {
    const std::string& output = proto.output(slot);
    if (!output.empty()) {
      outputs.push_back(produced_[next_produced_++]);
      continue;
    }
    std::string base =
        proto.name().empty() ? fmt::format("{}_{}", proto.op_type(), index) : proto.name();
    outputs.push_back(
        graph_->add_value(unique_name(fmt::format("{}{}/{}", kOmittedOutputPrefix, base, slot))));
  }
  std::string domain = proto.domain() == "ai.onnx" ? std::string() : proto.domain();
  NodeId id = graph_->add_node(proto.op_type(), std::move(inputs), std::move(outputs),
                               std::move(attributes), proto.name(), std::move(domain));
  graph_->node(id).doc_string = proto.doc_string();
}

std::vector<std::pair<std::string, Attribute>> GraphImporter::import_attributes(
    const onnx::NodeProto& node, const onnx::NodeProto* typed, const std::string& label) {
  const std::map<std::string_view, AttributeKind>* expected = nullptr;
  if (is_standard_domain(node.domain())) {
    auto it = known_attributes().find(node.op_type());
    if (it != known_attributes().end()) expected = &it->second;
  }
  std::vector<std::pair<std::string, Attribute>> attributes;
  std::set<std::string, std::less<>> seen;
  for (int index = 0; index < node.attribute_size(); ++index) {
    const auto& proto = node.attribute(index);
    const onnx::AttributeProto* typed_attribute =
        typed && index < typed->attribute_size() && typed->attribute(index).name() == proto.name()
            ? &typed->attribute(index)
            : nullptr;
    if (proto.name().empty()) {
      throw Error(fmt::format("{}: node {}: an attribute has no name", where_, label));
    }
    if (!seen.insert(proto.name()).second) {
      throw Error(
          fmt::format("{}: node {}: attribute '{}' is given twice", where_, label, proto.name()));
    }
    if (!proto.ref_attr_name().empty()) {
      throw Error(
          fmt::format("{}: node {}: attribute '{}' refers to a function attribute, which "
                      "only functions may do",
                      where_, label, proto.name()));
    }
    auto kind = attribute_kind(proto);
    if (!kind) {
      throw Error(
          fmt::format("{}: node {}: attribute '{}' has no value", where_, label, proto.name()));
    }
    if (expected) {
      auto it = expected->find(proto.name());
      if (it != expected->end() && it->second != *kind) {
        throw Error(fmt::format("{}: node {}: attribute '{}' must be {}, got {}", where_, label,
                                proto.name(), kind_name(it->second), kind_name(*kind)));
      }
    }
    attributes.emplace_back(proto.name(), import_attribute(proto, typed_attribute, *kind, label));
  }
  return attributes;
}

Attribute GraphImporter::import_attribute(const onnx::AttributeProto& proto,
                                          const onnx::AttributeProto* typed, AttributeKind kind,
                                          const std::string& label) {
  Attribute attribute;
  attribute.kind = kind;
  auto tensor_what = [&](int index) {
    std::string what = fmt::format("{}: node {}: attribute '{}'", where_, label, proto.name());
    return index < 0 ? what : fmt::format("{}[{}]", what, index);
  };
  switch (kind) {
    case AttributeKind::kFloat:
      attribute.f = proto.f();
      break;
    case AttributeKind::kInt:
      attribute.i = proto.i();
      break;
    case AttributeKind::kString:
      attribute.s = proto.s();
      break;
    case AttributeKind::kTensor:
      attribute.t = decode_tensor(proto.t(), tensor_what(-1), model_.options);
      break;
    case AttributeKind::kGraph:
      attribute.g = import_body(proto.g(), typed && typed->has_g() ? &typed->g() : nullptr,
                                proto.name(), label);
      break;
    case AttributeKind::kSparseTensor:
      attribute.opaque = OpaqueProto{proto.sparse_tensor().SerializeAsString()};
      break;
    case AttributeKind::kTypeProto:
      attribute.opaque = OpaqueProto{proto.tp().SerializeAsString()};
      break;
    case AttributeKind::kFloats:
      attribute.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case AttributeKind::kInts:
      attribute.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case AttributeKind::kStrings:
      attribute.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case AttributeKind::kTensors:
      for (int index = 0; index < proto.tensors_size(); ++index) {
        attribute.tensors.push_back(
            decode_tensor(proto.tensors(index), tensor_what(index), model_.options));
      }
      break;
    case AttributeKind::kGraphs:
      for (int index = 0; index < proto.graphs_size(); ++index) {
        const onnx::GraphProto* typed_body =
            typed && index < typed->graphs_size() ? &typed->graphs(index) : nullptr;
        attribute.graphs.push_back(
            import_body(proto.graphs(index), typed_body, proto.name(), label));
      }
      break;
    case AttributeKind::kSparseTensors:
      for (const auto& tensor : proto.sparse_tensors()) {
        attribute.opaques.push_back(OpaqueProto{tensor.SerializeAsString()});
      }
      break;
    case AttributeKind::kTypeProtos:
      for (const auto& type : proto.type_protos()) {
        attribute.opaques.push_back(OpaqueProto{type.SerializeAsString()});
      }
      break;
  }
  return attribute;
}

std::shared_ptr<const Graph> GraphImporter::import_body(const onnx::GraphProto& body,
                                                        const onnx::GraphProto* typed,
                                                        const std::string& attribute,
                                                        const std::string& label) {
  std::string where = fmt::format("{}, graph '{}' of node {}", where_, attribute, label);
  if (depth_ + 1 > model_.options.max_graph_depth) {
    throw Error(fmt::format("{}: control-flow bodies are nested deeper than {}", where,
                            model_.options.max_graph_depth));
  }
  Scope scope{graph_.get(), outer_};
  GraphImporter importer(model_, where, &scope, depth_ + 1);
  std::shared_ptr<Graph> graph = importer.run(body, typed);
  // Names the body reads from further out are implicit inputs of this graph too.
  for (const std::string& name : outer_scope_names(*graph)) {
    if (!graph_->find_value(name)) capture(name);
  }
  return graph;
}

}  // namespace

bool is_omitted_output(const Graph& graph, ValueId value) {
  const Value& v = graph.value(value);
  return v.name.starts_with(kOmittedOutputPrefix) && !v.is_graph_output &&
         graph.consumers(value).empty();
}

Graph import_onnx(const onnx::ModelProto& model, const std::string& origin,
                  const ImportOptions& options) {
  if (!model.has_graph()) {
    throw Error(fmt::format("{}: the model has no graph; expected an ONNX model", origin));
  }
  ModelInfo info{origin, options, {}, model.ir_version(), model.producer_name(), {}};
  for (const auto& opset : model.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? std::string() : opset.domain();
    info.opset_imports[domain] = opset.version();
  }

  // Shape inference is an aid: when it fails, values keep only their declared types.
  google::protobuf::Arena arena;
  const onnx::GraphProto* inferred = nullptr;
  if (options.infer_shapes) {
    inferred = options.isolate_shape_inference
                   ? infer_shapes_isolated(model, options.shape_inference_timeout_seconds, arena)
                   : infer_shapes_in_process(model, arena);
  }
  GraphImporter importer(info, origin, nullptr, 0);
  std::shared_ptr<Graph> graph = importer.run(model.graph(), inferred);
  // As onnx's checker and ONNX Runtime do: a misspelt attribute or an extra input is refused
  // here rather than ignored by a kernel. After the import, whose structural errors (and its
  // limit on nesting) come first.
  check_schemas(model, origin,
                SchemaCheckOptions{graph.get(), options.other_domains, options.runs_domain_op});
  if (!info.declared_disagreements.empty()) throw Error(info.declared_disagreements.front());
  graph->metadata.domain = model.domain();
  graph->metadata.version = model.model_version();
  graph->metadata.description = model.doc_string();
  for (const auto& entry : model.metadata_props())
    graph->metadata.properties[entry.key()] = entry.value();
  return std::move(*graph);
}

Graph import_onnx_from_bytes(std::string_view bytes, const std::string& origin,
                             const ImportOptions& options) {
  if (bytes.empty())
    throw Error(fmt::format("{}: the file is empty; expected an ONNX model", origin));
  if (bytes.size() > kMaxModelBytes) {
    throw Error(
        fmt::format("{}: the model has {} bytes; models of 2 GiB and more are not "
                    "supported (keep the weights as external data)",
                    origin, bytes.size()));
  }
  // In an arena: parsing a large model is mostly allocation, and freeing it message by
  // message took as long again.
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (!model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(fmt::format("{}: not a valid ONNX model: the protobuf data is truncated or corrupt",
                            origin));
  }
  return import_onnx(*model, origin, options);
}

Graph import_onnx(const std::string& path, const ImportOptions& options) {
  std::error_code error;
  auto status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    throw Error(fmt::format("{}: cannot open the model file: it does not exist", path));
  }
  if (!fs::is_regular_file(status)) {
    throw Error(fmt::format("{}: cannot open the model file: not a regular file", path));
  }
  auto size = fs::file_size(path, error);
  if (error) throw Error(fmt::format("{}: cannot read the model file: {}", path, error.message()));
  if (size > kMaxModelBytes) {
    throw Error(
        fmt::format("{}: the model has {} bytes; models of 2 GiB and more are not "
                    "supported (keep the weights as external data)",
                    path, size));
  }
  // Embedded weights are left in the file like external ones: the importer reads each straight
  // into the graph (or, for a reader of some weights, only records where it lies). The whole
  // file in memory, its parse and the graph's copy were three copies of every weight at once:
  // vit_b_16 peaked at 1,015 MiB for 330 MB of weights.
  std::string bytes = model_without_embedded_weights(path);
  ImportOptions with_folder = options;
  with_folder.model_file = path;
  if (with_folder.external_data_folder.empty()) {
    fs::path folder = fs::path(path).parent_path();
    with_folder.external_data_folder = folder.empty() ? "." : folder.string();
  }
  return import_onnx_from_bytes(bytes, path, with_folder);
}

}  // namespace cleave
