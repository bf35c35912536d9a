// f16 inputs of the binary kernels, computed in f32 and narrowed back.
#include <gtest/gtest.h>

#include <vector>

#include "kernel_test_util.h"
#include "support/half_float.h"

namespace cleave {
namespace {

using kernel_test::run_graph;

Tensor half(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = Tensor::allocate(DataType::kFloat16, std::move(shape));
  for (std::size_t i = 0; i < values.size(); ++i) t.data<uint16_t>()[i] = float_to_half(values[i]);
  return t;
}

std::vector<float> widened(const Tensor& t) {
  std::vector<float> values;
  for (int64_t i = 0; i < t.element_count(); ++i)
    values.push_back(half_to_float(t.data<uint16_t>()[i]));
  return values;
}

TEST(HalfBinary, MaxOfTwoHalfTensorsIsHalf) {
  const char* text = R"(graph g [ai.onnx=13] (%a: f16[3], %b: f16[3]) {
  %y = Max(%a, %b)
  return %y
})";
  Tensor y = run_graph(text, {{"a", half({3}, {1, -2, 3.5})}, {"b", half({3}, {0.5, 4, -1})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kFloat16);
  EXPECT_EQ(widened(y), (std::vector<float>{1, 4, 3.5}));
}

TEST(HalfBinary, FmodKeepsTheDividendsSign) {
  const char* text = R"(graph g [ai.onnx=13] (%a: f16[2], %b: f16[2]) {
  %y = Mod[fmod=1](%a, %b)
  return %y
})";
  Tensor y = run_graph(text, {{"a", half({2}, {-5, 5})}, {"b", half({2}, {3, -3})}})[0];
  EXPECT_EQ(widened(y), (std::vector<float>{-2, 2}));
}

}  // namespace
}  // namespace cleave
