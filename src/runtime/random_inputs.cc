// Seeded random graph inputs and small statistics shared by run, profile and bench.
#include "runtime/random_inputs.h"

#include <fmt/core.h>

#include <algorithm>
#include <random>

#include "ir/text.h"

namespace cleave {

Tensor random_tensor(const Value& value, uint64_t seed) {
  if (!value.shape.is_static()) {
    throw Error(fmt::format("input '{}' is {}: random values need a static shape (use --shape)",
                            value.name, print_type(value.dtype, value.shape)));
  }
  std::mt19937_64 rng(seed);
  Tensor tensor = Tensor::allocate(value.dtype, value.shape.sizes());
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  std::uniform_int_distribution<int> small(0, 3);
  int64_t count = tensor.element_count();
  switch (value.dtype) {
    case DataType::kFloat:
      for (int64_t i = 0; i < count; ++i) tensor.data<float>()[i] = real(rng);
      break;
    case DataType::kDouble:
      for (int64_t i = 0; i < count; ++i) tensor.data<double>()[i] = real(rng);
      break;
    case DataType::kInt64:
      for (int64_t i = 0; i < count; ++i) tensor.data<int64_t>()[i] = small(rng);
      break;
    case DataType::kInt32:
      for (int64_t i = 0; i < count; ++i) tensor.data<int32_t>()[i] = small(rng);
      break;
    case DataType::kBool:
      for (int64_t i = 0; i < count; ++i) tensor.data<uint8_t>()[i] = small(rng) & 1;
      break;
    case DataType::kUInt8: {  // Quantized data: the whole range.
      std::uniform_int_distribution<int> byte(0, 255);
      for (int64_t i = 0; i < count; ++i)
        tensor.data<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
      break;
    }
    case DataType::kInt8: {
      std::uniform_int_distribution<int> byte(-128, 127);
      for (int64_t i = 0; i < count; ++i) tensor.data<int8_t>()[i] = static_cast<int8_t>(byte(rng));
      break;
    }
    default:
      throw Error(fmt::format("input '{}': cannot make random values of type {}; pass --input",
                              value.name, dtype_name(value.dtype)));
  }
  return tensor;
}

std::map<std::string, Tensor> random_inputs(const Graph& graph, uint64_t seed) {
  std::map<std::string, Tensor> inputs;
  uint64_t index = 0;
  for (ValueId id : graph.inputs()) {
    const Value& value = graph.value(id);
    inputs[value.name] = random_tensor(value, seed * 1000003 + index++);
  }
  return inputs;
}

}  // namespace cleave
