// The attribute types the importer checks: a table of common standard ops, and the kind an
// AttributeProto holds.
#include <onnx/onnx_pb.h>

#include "onnx/onnx_detail.h"

namespace cleave::onnx_detail {

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

}  // namespace cleave::onnx_detail
