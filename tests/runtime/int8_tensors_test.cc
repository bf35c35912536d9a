// u8 and i8 tensors where quantized models need them: .npy files (|u1, |i1) and random inputs
// that cover the whole 8-bit range.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <string>

#include "ir/graph.h"
#include "runtime/npy.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("cleave_int8_" + std::to_string(::getpid()) + "_" + name + ".npy"))
      .string();
}

Value input_of(DataType type) {
  Value value;
  value.name = "x";
  value.dtype = type;
  value.shape = Shape::of({4096});
  return value;
}

TEST(Int8Tensors, NpyRoundTripKeepsTypeAndBytes) {
  for (DataType type : {DataType::kUInt8, DataType::kInt8}) {
    Tensor t = Tensor::allocate(type, {2, 2});
    const int8_t bytes[] = {-128, -1, 0, 127};
    std::copy(bytes, bytes + 4, t.data<int8_t>());
    const std::string path = temp_path(std::string(dtype_name(type)));
    write_npy(path, t);
    Tensor back = read_npy(path);
    std::filesystem::remove(path);
    EXPECT_EQ(back.dtype(), type);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_TRUE(std::equal(bytes, bytes + 4, back.data<int8_t>()));
  }
}

TEST(Int8Tensors, RandomUint8InputsSpanTheRange) {
  const Tensor t = random_tensor(input_of(DataType::kUInt8), 7);
  const auto v = t.values<uint8_t>();
  EXPECT_LT(*std::min_element(v.begin(), v.end()), 16);
  EXPECT_GT(*std::max_element(v.begin(), v.end()), 239);
}

TEST(Int8Tensors, RandomInt8InputsHaveBothSigns) {
  const Tensor t = random_tensor(input_of(DataType::kInt8), 7);
  const auto v = t.values<int8_t>();
  EXPECT_LT(*std::min_element(v.begin(), v.end()), -112);
  EXPECT_GT(*std::max_element(v.begin(), v.end()), 111);
}

}  // namespace
}  // namespace cleave
