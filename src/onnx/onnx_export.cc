// The ONNX exporter: graph, values, tensors and attributes back into protobuf form.
#include "onnx/onnx_export.h"

#include <fmt/core.h>

#include <limits>
#include <set>

#include "ir/scope.h"
#include "onnx/atomic_file.h"
#include "onnx/onnx_import.h"
#include "onnx/standard_forms.h"

namespace cleave {

namespace {

void export_graph(const Graph& graph, int64_t opset, onnx::GraphProto* proto,
                  const ExportOptions& options = {});

void export_tensor(const TensorData& data, onnx::TensorProto* proto) {
  proto->set_data_type(static_cast<int32_t>(data.dtype));
  for (int64_t dim : data.dims) proto->add_dims(dim);
  if (data.strings) {
    for (const std::string& item : *data.strings) proto->add_string_data(item);
  } else if (data.bytes) {
    proto->set_raw_data(data.bytes->data(), data.bytes->size());
  }
}

void export_type(const Value& value, onnx::ValueInfoProto* proto) {
  proto->set_name(value.name);
  if (value.opaque_type) {
    if (!proto->mutable_type()->ParseFromString(value.opaque_type->serialized)) {
      throw Error(fmt::format("value '{}': its stored ONNX type is corrupt", value.name));
    }
    return;
  }
  if (value.dtype == DataType::kUndefined && !value.shape.rank_known) return;
  auto* tensor = proto->mutable_type()->mutable_tensor_type();
  if (value.dtype != DataType::kUndefined) tensor->set_elem_type(static_cast<int32_t>(value.dtype));
  if (!value.shape.rank_known) return;
  auto* shape = tensor->mutable_shape();
  for (const Dim& dim : value.shape.dims) {
    auto* out = shape->add_dim();
    if (dim.is_known()) {
      out->set_dim_value(dim.size);
    } else if (!dim.symbol.empty()) {
      out->set_dim_param(dim.symbol);
    }
  }
}

bool has_type(const Value& value) {
  return value.opaque_type || value.dtype != DataType::kUndefined || value.shape.rank_known;
}

void parse_opaque(const OpaqueProto& opaque, google::protobuf::MessageLite* into,
                  const std::string& attribute) {
  if (!into->ParseFromString(opaque.serialized)) {
    throw Error(fmt::format("attribute '{}': its stored protobuf is corrupt", attribute));
  }
}

void export_attribute(const std::string& name, const Attribute& attribute, int64_t opset,
                      onnx::AttributeProto* proto) {
  using P = onnx::AttributeProto;
  proto->set_name(name);
  switch (attribute.kind) {
    case AttributeKind::kFloat:
      proto->set_type(P::FLOAT);
      proto->set_f(attribute.f);
      break;
    case AttributeKind::kInt:
      proto->set_type(P::INT);
      proto->set_i(attribute.i);
      break;
    case AttributeKind::kString:
      proto->set_type(P::STRING);
      proto->set_s(attribute.s);
      break;
    case AttributeKind::kTensor:
      proto->set_type(P::TENSOR);
      export_tensor(attribute.t, proto->mutable_t());
      break;
    case AttributeKind::kGraph:
      proto->set_type(P::GRAPH);
      if (!attribute.g) throw Error(fmt::format("attribute '{}' has no graph", name));
      export_graph(*attribute.g, opset, proto->mutable_g());
      break;
    case AttributeKind::kSparseTensor:
      proto->set_type(P::SPARSE_TENSOR);
      parse_opaque(attribute.opaque, proto->mutable_sparse_tensor(), name);
      break;
    case AttributeKind::kTypeProto:
      proto->set_type(P::TYPE_PROTO);
      parse_opaque(attribute.opaque, proto->mutable_tp(), name);
      break;
    case AttributeKind::kFloats:
      proto->set_type(P::FLOATS);
      for (float item : attribute.floats) proto->add_floats(item);
      break;
    case AttributeKind::kInts:
      proto->set_type(P::INTS);
      for (int64_t item : attribute.ints) proto->add_ints(item);
      break;
    case AttributeKind::kStrings:
      proto->set_type(P::STRINGS);
      for (const std::string& item : attribute.strings) proto->add_strings(item);
      break;
    case AttributeKind::kTensors:
      proto->set_type(P::TENSORS);
      for (const TensorData& item : attribute.tensors) export_tensor(item, proto->add_tensors());
      break;
    case AttributeKind::kGraphs:
      proto->set_type(P::GRAPHS);
      for (const auto& item : attribute.graphs) {
        if (!item) throw Error(fmt::format("attribute '{}' has a missing graph", name));
        export_graph(*item, opset, proto->add_graphs());
      }
      break;
    case AttributeKind::kSparseTensors:
      proto->set_type(P::SPARSE_TENSORS);
      for (const OpaqueProto& item : attribute.opaques) {
        parse_opaque(item, proto->add_sparse_tensors(), name);
      }
      break;
    case AttributeKind::kTypeProtos:
      proto->set_type(P::TYPE_PROTOS);
      for (const OpaqueProto& item : attribute.opaques) {
        parse_opaque(item, proto->add_type_protos(), name);
      }
      break;
  }
}

void export_node(const Graph& graph, NodeId id, int64_t opset, onnx::NodeProto* proto) {
  const Node& node = graph.node(id);
  proto->set_op_type(node.op_type);
  if (!node.name.empty()) proto->set_name(node.name);
  if (!node.domain.empty()) proto->set_domain(node.domain);
  if (!node.doc_string.empty()) proto->set_doc_string(node.doc_string);
  // Captures made explicit for the runtime are implicit in ONNX: the bodies read them by name.
  const std::size_t inputs = node.inputs.size() - captured_input_count(node);
  for (std::size_t i = 0; i < inputs; ++i) {
    const ValueId input = node.inputs[i];
    proto->add_input(input == kNoValue ? std::string() : graph.value(input).name);
  }
  for (ValueId output : node.outputs) {
    bool omitted = output == kNoValue || is_omitted_output(graph, output);
    proto->add_output(omitted ? std::string() : graph.value(output).name);
  }
  for (const auto& [name, attribute] : node.attributes) {
    if (name == kCapturesAttribute) continue;
    try {
      export_attribute(name, attribute, opset, proto->add_attribute());
    } catch (const Error& e) {
      throw Error(fmt::format("node {}: {}", graph.describe(id), e.what()));
    }
  }
}

void export_graph(const Graph& graph, int64_t opset, onnx::GraphProto* proto,
                  const ExportOptions& options) {
  proto->set_name(graph.name);
  if (!graph.doc_string.empty()) proto->set_doc_string(graph.doc_string);
  std::vector<NodeId> order = scoped_topological_order(graph);

  const auto as_input = [&](const TensorData& data) {
    return options.weights_as_inputs_above &&
           (!data.has_data() || data.element_count() > *options.weights_as_inputs_above);
  };
  std::vector<ValueId> initializers;
  std::vector<ValueId> typed_inputs;
  for (ValueId id : graph.initializers()) {
    const Value& value = graph.value(id);
    if (as_input(*value.initializer)) {
      typed_inputs.push_back(id);
      continue;
    }
    initializers.push_back(id);
    auto* tensor = proto->add_initializer();
    export_tensor(*value.initializer, tensor);
    tensor->set_name(value.name);
  }
  for (ValueId id : graph.inputs()) export_type(graph.value(id), proto->add_input());
  for (ValueId id : typed_inputs) {
    Value typed;
    typed.name = graph.value(id).name;
    typed.dtype = graph.value(id).initializer->dtype;
    typed.shape = Shape::of(graph.value(id).initializer->dims);
    export_type(typed, proto->add_input());
  }
  for (ValueId id : initializers) {
    if (graph.value(id).is_graph_input) export_type(graph.value(id), proto->add_input());
  }
  std::set<std::string> names;
  for (std::size_t index = 0; index < graph.value_capacity(); ++index) {
    names.insert(graph.value(static_cast<ValueId>(index)).name);
  }
  for (NodeId id : order) {
    export_node(graph, id, opset, proto->add_node());
    // Cleave's fused forms are cleave's own: the file gets the standard nodes they stand for.
    write_standard_form(graph, id, opset, *proto, names);
  }
  for (ValueId id : graph.outputs()) export_type(graph.value(id), proto->add_output());

  for (std::size_t index = 0; index < graph.value_capacity(); ++index) {
    auto id = static_cast<ValueId>(index);
    const Value& value = graph.value(id);
    if (value.is_graph_input || value.is_graph_output || value.initializer || !has_type(value) ||
        is_omitted_output(graph, id)) {
      continue;
    }
    bool produced = value.producer >= 0 && !graph.node(value.producer).removed;
    bool captured = value.producer < 0 && !graph.consumers(id).empty();
    if (produced || captured) export_type(value, proto->add_value_info());
  }
}

}  // namespace

onnx::ModelProto to_onnx(const Graph& graph) {
  return to_onnx(graph, ExportOptions{});
}

onnx::ModelProto to_onnx(const Graph& graph, const ExportOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(graph.ir_version);
  if (!graph.producer_name.empty()) model.set_producer_name(graph.producer_name);
  if (!graph.metadata.domain.empty()) model.set_domain(graph.metadata.domain);
  if (graph.metadata.version != 0) model.set_model_version(graph.metadata.version);
  if (!graph.metadata.description.empty()) model.set_doc_string(graph.metadata.description);
  for (const auto& [key, value] : graph.metadata.properties) {
    auto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  for (const auto& [domain, version] : graph.opset_imports) {
    auto* opset = model.add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
  try {
    const auto standard = graph.opset_imports.find("");
    export_graph(graph, standard == graph.opset_imports.end() ? 17 : standard->second,
                 model.mutable_graph(), options);
  } catch (const Error& e) {
    throw Error(fmt::format("exporting graph '{}': {}", graph.name, e.what()));
  }
  return model;
}

void write_model_file(const onnx::ModelProto& model, const std::string& path) {
  std::size_t size = model.ByteSizeLong();
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw Error(
        fmt::format("{}: the model would have {} bytes; models of 2 GiB and more are not "
                    "supported",
                    path, size));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw Error(fmt::format("{}: cannot serialize the model", path));
  }
  write_file_atomically(path, bytes);
}

void export_onnx(const Graph& graph, const std::string& path) {
  onnx::ModelProto model;
  try {
    model = to_onnx(graph);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  write_model_file(model, path);
}

}  // namespace cleave
