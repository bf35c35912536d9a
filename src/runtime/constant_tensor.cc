// Initializers as tensors: refuse, by name and type, those the kernels cannot read.
#include "runtime/constant_tensor.h"

#include <fmt/core.h>

namespace cleave {

Tensor constant_tensor(const Graph& graph, ValueId id) {
  const Value& value = graph.value(id);
  const TensorData& data = *value.initializer;
  if (data.strings) {
    throw Error(fmt::format(
        "initializer '{}' is a STRING tensor ({} strings); the runtime's kernels have no "
        "string support",
        value.name, data.strings->size()));
  }
  if (!data.bytes) {
    throw Error(
        fmt::format("initializer '{}' ({}) has no data", value.name, dtype_name(data.dtype)));
  }
  return Tensor::borrow(data.dtype, data.dims, data.bytes->data());
}

}  // namespace cleave
