// ONNX value types (element type and dims, fixed or symbolic) applied to cleave Values.
#include <fmt/core.h>
#include <fmt/format.h>

#include <limits>
#include <string>
#include <vector>

#include "onnx/onnx_detail.h"

namespace cleave::onnx_detail {

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

}  // namespace cleave::onnx_detail
