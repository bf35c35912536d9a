// The int8 quantization kernels: rounding and saturation, per-axis scales, dynamic ranges, and
// the int8 products' zero points, bias and requantization, against sums worked by hand.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;
using kernel_test::run_graph;

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[8]) {
  @scale: f32[] = [2.0]
  @zero: u8[] = [128]
  %y = QuantizeLinear(%x, @scale, @zero)
  return %y
}
)";
  // x / 2 = 0, 1, 1.5, 2.5, 3.5, 500, -127, -500.
  Tensor y = run_graph(text, {{"x", floats({8}, {0, 2, 3, 5, 7, 1000, -254, -1000})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kUInt8);
  expect_values(y, {128, 129, 130, 130, 132, 255, 1, 0});
}

TEST(QuantizeLinear, PerAxisScalesAndInt8ZeroPoints) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[2,3]) {
  @scale: f32[3] = [1.0, 2.0, 4.0]
  @zero: i8[3] = [0, -1, 10]
  %y = QuantizeLinear[axis=1](%x, @scale, @zero)
  return %y
}
)";
  Tensor y = run_graph(text, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kInt8);
  expect_values(y, {1, 0, 11, 4, 1, 12});
}

TEST(DequantizeLinear, PerAxisScalesAndZeroPoints) {
  const char* text = R"(graph g [ai.onnx=13] (%x: u8[2,2]) {
  @scale: f32[2] = [0.5, 2.0]
  @zero: u8[2] = [10, 20]
  %y = DequantizeLinear[axis=0](%x, @scale, @zero)
  return %y
}
)";
  Tensor y = run_graph(text, {{"x", make_tensor(DataType::kUInt8, {2, 2}, {10, 20, 30, 40})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kFloat);
  expect_values(y, {0, 5, 20, 40});
}

TEST(DynamicQuantizeLinear, CoversTheRangeAndZero) {
  const char* text = R"(graph g [ai.onnx=11] (%x: f32[4]) {
  %y, %scale, %zero = DynamicQuantizeLinear(%x)
  return %y, %scale, %zero
}
)";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({4}, {-1, 0, 2, 0.6})}});
  expect_values(out[1], {3.0 / 255}, 1e-6);
  expect_values(out[2], {85});
  expect_values(out[0], {0, 85, 255, 136});
}

TEST(MatMulInteger, PerColumnZeroPointsAndBatchBroadcast) {
  const char* text = R"(graph g [ai.onnx=10] (%a: u8[2,1,2], %b: i8[2,2]) {
  @a_zero: u8[] = [1]
  @b_zero: i8[2] = [0, 1]
  %y = MatMulInteger(%a, %b, @a_zero, @b_zero)
  return %y
}
)";
  Tensor y = run_graph(text, {{"a", make_tensor(DataType::kUInt8, {2, 1, 2}, {1, 2, 3, 4})},
                              {"b", make_tensor(DataType::kInt8, {2, 2}, {1, -1, 2, 0})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kInt32);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 1, 2}));
  expect_values(y, {2, -1, 8, -7});
}

TEST(QLinearMatMul, RequantizesHalfToEven) {
  const char* text = R"(graph g [ai.onnx=10] (%a: u8[1,2], %b: i8[2,2]) {
  @a_scale: f32[] = [0.5]
  @a_zero: u8[] = [10]
  @b_scale: f32[] = [1.0]
  @b_zero: i8[] = [0]
  @y_scale: f32[] = [2.0]
  @y_zero: u8[] = [5]
  %y = QLinearMatMul(%a, @a_scale, @a_zero, %b, @b_scale, @b_zero, @y_scale, @y_zero)
  return %y
}
)";
  // Sums 30 and 40, times 0.5 / 2: 7.5 (rounds to 8) and 10.
  Tensor y = run_graph(text, {{"a", make_tensor(DataType::kUInt8, {1, 2}, {10, 20})},
                              {"b", make_tensor(DataType::kInt8, {2, 2}, {1, 2, 3, 4})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kUInt8);
  expect_values(y, {13, 15});
}

TEST(QGemm, AddsTheInt32BiasBeforeRequantizing) {
  const char* text = R"(graph g [ai.onnx=13, com.microsoft=1] (%a: u8[1,2]) {
  @a_scale: f32[] = [0.5]
  @a_zero: u8[] = [10]
  @b: i8[2,2] = [1, 2, 3, 4]
  @b_scale: f32[] = [1.0]
  @b_zero: i8[] = [0]
  @c: i32[2] = [2, -40]
  @y_scale: f32[] = [2.0]
  @y_zero: u8[] = [5]
  %y = com.microsoft.QGemm(%a, @a_scale, @a_zero, @b, @b_scale, @b_zero, @c, @y_scale, @y_zero)
  return %y
}
)";
  // Sums 30 + 2 and 40 - 40, times 0.5 / 2: 8 and 0.
  Tensor y = run_graph(text, {{"a", make_tensor(DataType::kUInt8, {1, 2}, {10, 20})}})[0];
  expect_values(y, {13, 5});
}

TEST(ConvInteger, PaddingContributesNothing) {
  const char* text = R"(graph g [ai.onnx=10] (%x: u8[1,1,2,2]) {
  @w: u8[1,1,2,2] = [1, 1, 1, 1]
  @x_zero: u8[] = [1]
  %y = ConvInteger[pads=[1, 1, 1, 1]](%x, @w, @x_zero)
  return %y
}
)";
  Tensor y = run_graph(text, {{"x", make_tensor(DataType::kUInt8, {1, 1, 2, 2}, {1, 2, 3, 4})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 1, 3, 3}));
  expect_values(y, {0, 1, 1, 2, 6, 4, 2, 5, 3});
}

TEST(QLinearConv, PerChannelWeightScalesAndBias) {
  const char* text = R"(graph g [ai.onnx=10] (%x: u8[1,1,1,2]) {
  @x_scale: f32[] = [0.5]
  @x_zero: u8[] = [2]
  @w: i8[2,1,1,1] = [1, -2]
  @w_scale: f32[2] = [1.0, 0.5]
  @w_zero: i8[] = [0]
  @y_scale: f32[] = [1.0]
  @y_zero: u8[] = [10]
  @bias: i32[2] = [1, 0]
  %y = QLinearConv(%x, @x_scale, @x_zero, @w, @w_scale, @w_zero, @y_scale, @y_zero, @bias)
  return %y
}
)";
  // Channel 0: sums 3, 5 times 0.5 = 1.5, 2.5 (both round to 2); channel 1: -4, -8 times 0.25.
  Tensor y = run_graph(text, {{"x", make_tensor(DataType::kUInt8, {1, 1, 1, 2}, {4, 6})}})[0];
  EXPECT_EQ(y.dtype(), DataType::kUInt8);
  expect_values(y, {12, 12, 9, 8});
}

}  // namespace
}  // namespace cleave
