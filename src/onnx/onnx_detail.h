// Internal to the ONNX importer: decoding tensors (typed fields, raw or external data), value
// types and the attribute types it checks, shared by the importer's files.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "onnx/onnx_import.h"

namespace cleave::onnx_detail {

/// Protobuf refuses messages of 2 GiB and more.
inline constexpr std::size_t kMaxModelBytes = std::numeric_limits<int>::max();

/// "[1,3,224,224]".
std::string format_dims(const google::protobuf::RepeatedField<int64_t>& dims);

/// Decodes a TensorProto: typed fields, raw data, or (with options.external_data_folder) a
/// checked reference into an external data file. `what` names it in errors.
TensorData decode_tensor(const onnx::TensorProto& tensor, const std::string& what,
                         const ImportOptions& options);

/// "[1,3,?,seq]": fixed dims as numbers, symbolic ones by name, unknown ones as "?".
std::string format_shape(const onnx::TensorShapeProto& shape);

/// Applies a declared or inferred ONNX type to a value: its element type, and its shape where
/// the type has one. Throws Error (prefixed by `where`) for an unsupported element type, a
/// negative dim, or a shape of more elements than int64 counts.
void apply_type(Value& value, const onnx::TypeProto& type, const std::string& where);

/// Attribute types of common standard ops, by op and attribute name.
const std::map<std::string_view, std::map<std::string_view, AttributeKind>>& known_attributes();

/// The kind an AttributeProto holds (its declared type, else the field that is set).
std::optional<AttributeKind> attribute_kind(const onnx::AttributeProto& proto);

/// "float", "ints", "graph" and the like.
std::string_view kind_name(AttributeKind kind);

}  // namespace cleave::onnx_detail
