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

#include "onnx/schema_check.h"
#include "onnx/scope.h"
#include "onnx/shape_inference.h"

namespace cleave {

namespace {

namespace fs = std::filesystem;

// Protobuf refuses messages of 2 GiB and more.
constexpr std::size_t kMaxModelBytes = std::numeric_limits<int>::max();

// Attribute types of common standard ops: a wrong one is reported at import rather than
// surfacing later as a confusing failure in a pass.
const std::map<std::string_view, std::map<std::string_view, AttributeKind>>& known_attributes() {
  using K = AttributeKind;
  static const std::map<std::string_view, std::map<std::string_view, AttributeKind>> table = {
      {"Conv",
       {{"auto_pad", K::kString},
        {"dilations", K::kInts},
        {"group", K::kInt},
        {"kernel_shape", K::kInts},
        {"pads", K::kInts},
        {"strides", K::kInts}}},
      {"ConvTranspose",
       {{"auto_pad", K::kString},
        {"dilations", K::kInts},
        {"group", K::kInt},
        {"kernel_shape", K::kInts},
        {"output_padding", K::kInts},
        {"output_shape", K::kInts},
        {"pads", K::kInts},
        {"strides", K::kInts}}},
      {"MaxPool",
       {{"auto_pad", K::kString},
        {"ceil_mode", K::kInt},
        {"dilations", K::kInts},
        {"kernel_shape", K::kInts},
        {"pads", K::kInts},
        {"storage_order", K::kInt},
        {"strides", K::kInts}}},
      {"AveragePool",
       {{"auto_pad", K::kString},
        {"ceil_mode", K::kInt},
        {"count_include_pad", K::kInt},
        {"kernel_shape", K::kInts},
        {"pads", K::kInts},
        {"strides", K::kInts}}},
      {"Gemm",
       {{"alpha", K::kFloat},
        {"beta", K::kFloat},
        {"transA", K::kInt},
        {"transB", K::kInt},
        {"broadcast", K::kInt}}},
      {"Concat", {{"axis", K::kInt}}},
      {"Transpose", {{"perm", K::kInts}}},
      {"Reshape", {{"allowzero", K::kInt}, {"shape", K::kInts}}},
      {"Softmax", {{"axis", K::kInt}}},
      {"Split", {{"axis", K::kInt}, {"split", K::kInts}}},
      {"Squeeze", {{"axes", K::kInts}}},
      {"Unsqueeze", {{"axes", K::kInts}}},
      {"Gather", {{"axis", K::kInt}}},
      {"Flatten", {{"axis", K::kInt}}},
      {"BatchNormalization",
       {{"epsilon", K::kFloat},
        {"momentum", K::kFloat},
        {"spatial", K::kInt},
        {"training_mode", K::kInt}}},
      {"LRN", {{"alpha", K::kFloat}, {"beta", K::kFloat}, {"bias", K::kFloat}, {"size", K::kInt}}},
      {"Cast", {{"to", K::kInt}, {"saturate", K::kInt}}},
      {"Resize",
       {{"mode", K::kString},
        {"coordinate_transformation_mode", K::kString},
        {"cubic_coeff_a", K::kFloat},
        {"exclude_outside", K::kInt},
        {"extrapolation_value", K::kFloat},
        {"nearest_mode", K::kString},
        {"antialias", K::kInt},
        {"axes", K::kInts},
        {"keep_aspect_ratio_policy", K::kString}}},
      {"Pad", {{"mode", K::kString}, {"pads", K::kInts}, {"value", K::kFloat}}},
      {"Slice", {{"axes", K::kInts}, {"ends", K::kInts}, {"starts", K::kInts}}},
  };
  return table;
}

std::string format_dims(const google::protobuf::RepeatedField<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims.begin(), dims.end(), ","));
}

std::string format_shape(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> dims;
  for (const auto& dim : shape.dim()) {
    if (dim.has_dim_value()) {
      dims.push_back(std::to_string(dim.dim_value()));
    } else {
      dims.push_back(dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param() : "?");
    }
  }
  return fmt::format("[{}]", fmt::join(dims, ","));
}

std::string node_label(const onnx::NodeProto& node, int index) {
  if (node.name().empty()) return fmt::format("#{} ({})", index, node.op_type());
  return fmt::format("'{}' ({})", node.name(), node.op_type());
}

bool is_standard_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// The element count of `dims`, refusing negative dims and counts int64 cannot hold.
int64_t checked_element_count(const google::protobuf::RepeatedField<int64_t>& dims,
                              const std::string& what) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0)
      throw Error(fmt::format("{}: negative dimension in dims {}", what, format_dims(dims)));
  }
  for (int64_t dim : dims) {
    if (dim == 0) return 0;
    if (count > std::numeric_limits<int64_t>::max() / dim) {
      throw Error(fmt::format("{}: dims {} hold more elements than int64 can count", what,
                              format_dims(dims)));
    }
    count *= dim;
  }
  return count;
}

struct ExternalLocation {
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;
};

int64_t parse_external_number(const std::string& text, const std::string& key,
                              const std::string& what) {
  int64_t number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || number < 0) {
    throw Error(fmt::format("{}: external data '{}' is '{}', expected a non-negative integer", what,
                            key, text));
  }
  return number;
}

ExternalLocation external_location(const onnx::TensorProto& tensor, const std::string& what) {
  ExternalLocation result;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") result.location = entry.value();
    if (entry.key() == "offset")
      result.offset = parse_external_number(entry.value(), "offset", what);
    if (entry.key() == "length")
      result.length = parse_external_number(entry.value(), "length", what);
  }
  if (result.location.empty()) {
    throw Error(fmt::format("{}: external data has no 'location'", what));
  }
  return result;
}

// True when `path` lies inside `folder` (both canonical), comparing whole components.
bool is_inside(const fs::path& path, const fs::path& folder) {
  auto inner = path.begin();
  for (auto outer = folder.begin(); outer != folder.end(); ++outer, ++inner) {
    if (outer->empty()) continue;  // Trailing separator of the folder.
    if (inner == path.end() || *inner != *outer) return false;
  }
  return true;
}

// Checks an external tensor's location (inside the model folder, file long enough).
ExternalWeight locate_external(const onnx::TensorProto& tensor, std::size_t expected_bytes,
                               const std::string& what, const ImportOptions& options) {
  ExternalLocation where = external_location(tensor, what);
  if (options.external_data_folder.empty()) {
    throw Error(
        fmt::format("{}: external data file '{}' needs the model's folder; import the "
                    "model from its file",
                    what, where.location));
  }
  fs::path relative(where.location);
  bool escapes =
      relative.is_absolute() || relative.has_root_name() || relative.has_root_directory();
  for (const auto& part : relative) escapes = escapes || part == "..";
  std::error_code error;
  fs::path folder = fs::weakly_canonical(fs::absolute(options.external_data_folder), error);
  fs::path file;
  if (!escapes && !error) {
    file = fs::weakly_canonical(folder / relative, error);
    escapes = error || !is_inside(file, folder);
  }
  if (escapes) {
    throw Error(fmt::format("{}: external data file '{}' is outside the model folder '{}'", what,
                            where.location, options.external_data_folder));
  }
  if (!fs::is_regular_file(file, error)) {
    throw Error(fmt::format("{}: external data file '{}' does not exist or is not a file", what,
                            file.string()));
  }
  auto file_size = fs::file_size(file, error);
  if (error) {
    throw Error(fmt::format("{}: cannot read external data file '{}': {}", what, file.string(),
                            error.message()));
  }
  if (where.length && static_cast<uint64_t>(*where.length) != expected_bytes) {
    throw Error(fmt::format("{}: external data length {} differs from the {} bytes its dims need",
                            what, *where.length, expected_bytes));
  }
  auto offset = static_cast<uint64_t>(where.offset);
  if (offset > file_size || expected_bytes > file_size - offset) {
    throw Error(fmt::format("{}: external data needs bytes {}..{} of '{}', which has {} bytes",
                            what, offset, offset + expected_bytes, file.string(), file_size));
  }
  return ExternalWeight{file.string(), offset, expected_bytes};
}

// Copies ONNX's typed storage into little-endian elements of `width` bytes each; narrower
// element types travel widened in int32_data/uint64_data, so keep the low bytes.
template <typename Source>
std::shared_ptr<std::vector<std::byte>> pack(const google::protobuf::RepeatedField<Source>& field,
                                             std::size_t width) {
  auto bytes = std::make_shared<std::vector<std::byte>>(field.size() * width);
  std::byte* out = bytes->data();
  for (Source item : field) {
    std::memcpy(out, &item, width);  // Little-endian host: the low bytes come first.
    out += width;
  }
  return bytes;
}

TensorData decode_tensor(const onnx::TensorProto& tensor, const std::string& what,
                         const ImportOptions& options) {
  int type_number = tensor.data_type();
  if (type_number <= 0 || type_number > static_cast<int>(DataType::kBFloat16)) {
    throw Error(fmt::format("{}: unsupported tensor data type {}", what, type_number));
  }
  TensorData data;
  data.dtype = static_cast<DataType>(type_number);
  int64_t count = checked_element_count(tensor.dims(), what);
  data.dims.assign(tensor.dims().begin(), tensor.dims().end());
  if (tensor.has_segment())
    throw Error(fmt::format("{}: segmented tensors are not supported", what));

  if (data.dtype == DataType::kString) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.has_raw_data()) {
      throw Error(fmt::format("{}: string tensors must keep their data in string_data", what));
    }
    if (tensor.string_data_size() != count) {
      throw Error(fmt::format("{}: holds {} strings, its dims {} need {}", what,
                              tensor.string_data_size(), format_dims(tensor.dims()), count));
    }
    data.strings = std::make_shared<std::vector<std::string>>(tensor.string_data().begin(),
                                                              tensor.string_data().end());
    return data;
  }

  std::size_t width = element_size(data.dtype);
  if (static_cast<uint64_t>(count) > kMaxModelBytes / width &&
      tensor.data_location() != onnx::TensorProto::EXTERNAL) {
    throw Error(fmt::format("{}: dims {} need more bytes than a model file can hold", what,
                            format_dims(tensor.dims())));
  }
  if (static_cast<uint64_t>(count) > std::numeric_limits<std::size_t>::max() / 16) {
    throw Error(fmt::format("{}: dims {} are too large", what, format_dims(tensor.dims())));
  }
  std::size_t expected_bytes = static_cast<std::size_t>(count) * width;

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    ExternalWeight weight = locate_external(tensor, expected_bytes, what, options);
    if (options.unread_external && !tensor.name().empty()) {
      (*options.unread_external)[tensor.name()] = std::move(weight);
    } else {
      data.bytes = read_external_weight(weight, what);
    }
    return data;
  }
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expected_bytes) {
      throw Error(fmt::format("{}: raw_data has {} bytes, its dims {} of {} need {}", what,
                              tensor.raw_data().size(), format_dims(tensor.dims()),
                              dtype_name(data.dtype), expected_bytes));
    }
    auto bytes = std::make_shared<std::vector<std::byte>>(expected_bytes);
    if (expected_bytes > 0) std::memcpy(bytes->data(), tensor.raw_data().data(), expected_bytes);
    data.bytes = std::move(bytes);
    return data;
  }

  // Typed storage: which field, and how many of its items make one element.
  std::string_view field_name;
  int64_t field_size = 0;
  int64_t per_element = 1;
  switch (data.dtype) {
    case DataType::kFloat:
    case DataType::kComplex64:
      field_name = "float_data";
      field_size = tensor.float_data_size();
      per_element = data.dtype == DataType::kComplex64 ? 2 : 1;
      break;
    case DataType::kDouble:
    case DataType::kComplex128:
      field_name = "double_data";
      field_size = tensor.double_data_size();
      per_element = data.dtype == DataType::kComplex128 ? 2 : 1;
      break;
    case DataType::kInt64:
      field_name = "int64_data";
      field_size = tensor.int64_data_size();
      break;
    case DataType::kUInt32:
    case DataType::kUInt64:
      field_name = "uint64_data";
      field_size = tensor.uint64_data_size();
      break;
    default:
      field_name = "int32_data";
      field_size = tensor.int32_data_size();
      break;
  }
  if (field_size != count * per_element) {
    throw Error(fmt::format("{}: holds {} items in {}, its dims {} of {} need {}", what, field_size,
                            field_name, format_dims(tensor.dims()), dtype_name(data.dtype),
                            count * per_element));
  }
  switch (data.dtype) {
    case DataType::kFloat:
    case DataType::kComplex64:
      data.bytes = pack(tensor.float_data(), sizeof(float));
      break;
    case DataType::kDouble:
    case DataType::kComplex128:
      data.bytes = pack(tensor.double_data(), sizeof(double));
      break;
    case DataType::kInt64:
      data.bytes = pack(tensor.int64_data(), width);
      break;
    case DataType::kUInt32:
    case DataType::kUInt64:
      data.bytes = pack(tensor.uint64_data(), width);
      break;
    default:
      data.bytes = pack(tensor.int32_data(), width);
      break;
  }
  return data;
}

// Applies a declared or inferred ONNX type to a value.
void apply_type(Value& value, const onnx::TypeProto& type, const std::string& where) {
  if (!type.has_tensor_type()) {
    if (type.value_case() != onnx::TypeProto::VALUE_NOT_SET) {
      value.opaque_type = OpaqueProto{type.SerializeAsString()};
    }
    return;
  }
  const auto& tensor = type.tensor_type();
  int type_number = tensor.elem_type();
  if (type_number < 0 || type_number > static_cast<int>(DataType::kBFloat16)) {
    throw Error(fmt::format("{}: value '{}' has unsupported element type {}", where, value.name,
                            type_number));
  }
  value.dtype = static_cast<DataType>(type_number);
  if (!tensor.has_shape()) return;
  Shape shape;
  shape.rank_known = true;
  int64_t known_count = 1;
  bool overflows = false;
  for (const auto& dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() < 0) {
      throw Error(fmt::format(
          "{}: value '{}': dim {} is {}; expected a size >= 0 (write a dynamic dim as a "
          "symbolic name, dim_param)",
          where, value.name, shape.dims.size(), dim.dim_value()));
    }
    if (dim.has_dim_value()) {
      int64_t size = dim.dim_value();
      if (size == 0) known_count = 0;
      if (known_count != 0 && size > std::numeric_limits<int64_t>::max() / known_count) {
        overflows = true;
      } else {
        known_count *= size;
      }
      shape.dims.push_back(Dim::known(size));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      shape.dims.push_back(Dim::named(dim.dim_param()));
    } else {
      shape.dims.push_back(Dim::unknown());
    }
  }
  if (overflows && known_count != 0) {
    throw Error(fmt::format("{}: the shape of value '{}' has more elements than int64 can count",
                            where, value.name));
  }
  value.shape = std::move(shape);
}

std::optional<AttributeKind> attribute_kind(const onnx::AttributeProto& proto) {
  using P = onnx::AttributeProto;
  switch (proto.type()) {
    case P::FLOAT:
      return AttributeKind::kFloat;
    case P::INT:
      return AttributeKind::kInt;
    case P::STRING:
      return AttributeKind::kString;
    case P::TENSOR:
      return AttributeKind::kTensor;
    case P::GRAPH:
      return AttributeKind::kGraph;
    case P::SPARSE_TENSOR:
      return AttributeKind::kSparseTensor;
    case P::TYPE_PROTO:
      return AttributeKind::kTypeProto;
    case P::FLOATS:
      return AttributeKind::kFloats;
    case P::INTS:
      return AttributeKind::kInts;
    case P::STRINGS:
      return AttributeKind::kStrings;
    case P::TENSORS:
      return AttributeKind::kTensors;
    case P::GRAPHS:
      return AttributeKind::kGraphs;
    case P::SPARSE_TENSORS:
      return AttributeKind::kSparseTensors;
    case P::TYPE_PROTOS:
      return AttributeKind::kTypeProtos;
    case P::UNDEFINED:
      break;
  }
  // Models of IR version 1 have no type field: the one field set says what it is.
  if (proto.has_f()) return AttributeKind::kFloat;
  if (proto.has_i()) return AttributeKind::kInt;
  if (proto.has_s()) return AttributeKind::kString;
  if (proto.has_t()) return AttributeKind::kTensor;
  if (proto.has_g()) return AttributeKind::kGraph;
  if (proto.has_sparse_tensor()) return AttributeKind::kSparseTensor;
  if (proto.has_tp()) return AttributeKind::kTypeProto;
  if (proto.floats_size() > 0) return AttributeKind::kFloats;
  if (proto.ints_size() > 0) return AttributeKind::kInts;
  if (proto.strings_size() > 0) return AttributeKind::kStrings;
  if (proto.tensors_size() > 0) return AttributeKind::kTensors;
  if (proto.graphs_size() > 0) return AttributeKind::kGraphs;
  if (proto.sparse_tensors_size() > 0) return AttributeKind::kSparseTensors;
  if (proto.type_protos_size() > 0) return AttributeKind::kTypeProtos;
  return std::nullopt;
}

std::string_view kind_name(AttributeKind kind) {
  Attribute attribute;
  attribute.kind = kind;
  return attribute.kind_name();
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
  check_schemas(model, origin, SchemaCheckOptions{graph.get(), options.other_domains});
  if (!info.declared_disagreements.empty()) throw Error(info.declared_disagreements.front());
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
  std::string bytes(size, '\0');
  std::ifstream stream(path, std::ios::binary);
  stream.read(bytes.data(), static_cast<std::streamsize>(size));
  if (!stream || static_cast<std::size_t>(stream.gcount()) != size) {
    throw Error(fmt::format("{}: cannot read the model file", path));
  }
  ImportOptions with_folder = options;
  if (with_folder.external_data_folder.empty()) {
    fs::path folder = fs::path(path).parent_path();
    with_folder.external_data_folder = folder.empty() ? "." : folder.string();
  }
  return import_onnx_from_bytes(bytes, path, with_folder);
}

std::shared_ptr<std::vector<std::byte>> read_external_weight(const ExternalWeight& weight,
                                                             const std::string& what) {
  auto bytes = std::make_shared<std::vector<std::byte>>(weight.bytes);
  std::size_t at = 0;
  read_external_weight_in_pieces(weight, what, [&](const std::byte* piece, std::size_t size) {
    std::memcpy(bytes->data() + at, piece, size);
    at += size;
  });
  return bytes;
}

void read_external_weight_in_pieces(
    const ExternalWeight& weight, const std::string& what,
    const std::function<void(const std::byte*, std::size_t)>& piece) {
  constexpr std::size_t kPiece = std::size_t{1} << 22;
  std::vector<std::byte> buffer(std::min(weight.bytes, kPiece));
  std::ifstream stream(weight.file, std::ios::binary);
  stream.seekg(static_cast<std::streamoff>(weight.offset));
  for (std::size_t done = 0; done < weight.bytes;) {
    const std::size_t size = std::min(kPiece, weight.bytes - done);
    stream.read(reinterpret_cast<char*>(buffer.data()), static_cast<std::streamsize>(size));
    if (!stream || static_cast<std::size_t>(stream.gcount()) != size) {
      throw Error(fmt::format("{}: cannot read {} bytes at offset {} of external data file '{}'",
                              what, weight.bytes, weight.offset, weight.file));
    }
    piece(buffer.data(), size);
    done += size;
  }
}

TensorData tensor_from_onnx(const onnx::TensorProto& tensor, const std::string& what) {
  return decode_tensor(tensor, what, ImportOptions{});
}

}  // namespace cleave
