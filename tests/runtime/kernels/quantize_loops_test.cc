// The int8 element-wise loops: the vector QuantizeLinear, DequantizeLinear and QLinearAdd loops
// against their scalar references on edge values (ties, saturation, NaN, tails), and
// QLinearAdd's ONNX Runtime rounding.
#include "runtime/kernels/math/quantize_loops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ir/text.h"
#include "kernel_test_util.h"
#include "passes/qdq_fusion.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::make_tensor;
using kernel_test::run_graph;

// Values whose quotients by 0.5 are ties (k + 0.5, both parities and signs), near ties, far
// out of range both ways, infinities and NaN; 37 of them, so that every loop has a tail.
std::vector<float> edge_floats() {
  std::vector<float> x = {0.25f,
                          0.75f,
                          1.25f,
                          -0.25f,
                          -0.75f,
                          -1.25f,
                          63.75f,
                          64.25f,
                          -64.25f,
                          127.25f,
                          127.75f,
                          -127.75f,
                          1e9f,
                          -1e9f,
                          0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          0.2499999f,
                          0.2500001f};
  for (int i = 0; i < 16; ++i) x.push_back(static_cast<float>(i) * 7.3f - 50.0f);
  return x;
}

template <typename T>
void expect_quantize_matches_reference(int32_t zero) {
  const std::vector<float> x = edge_floats();
  const auto count = static_cast<int64_t>(x.size());
  std::vector<T> vector(x.size()), reference(x.size());
  quantize_loops::quantize(x.data(), 0.5f, zero, vector.data(), count);
  quantize_loops::quantize_reference(x.data(), 0.5f, zero, reference.data(), count);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(int{vector[i]}, int{reference[i]}) << "x = " << x[i] << ", zero point " << zero;
  }
}

TEST(QuantizeLoops, QuantizeMatchesTheScalarReferenceOnTiesAndSaturation) {
  expect_quantize_matches_reference<uint8_t>(0);
  expect_quantize_matches_reference<uint8_t>(128);
  expect_quantize_matches_reference<uint8_t>(255);
  expect_quantize_matches_reference<int8_t>(0);
  expect_quantize_matches_reference<int8_t>(-128);
  expect_quantize_matches_reference<int8_t>(5);
}

TEST(QuantizeLoops, QuantizeRoundsTiesToEvenAndSaturates) {
  // x / 0.5 = 0.5, 1.5, 2.5, -0.5, 1e6, -1e6, NaN, then a tail of one.
  const std::vector<float> x = {
      0.25f, 0.75f, 1.25f, -0.25f, 5e5f, -5e5f, std::numeric_limits<float>::quiet_NaN(),
      1.25f, 0.75f};
  std::vector<int8_t> y(x.size());
  quantize_loops::quantize(x.data(), 0.5f, 0, y.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(std::vector<int>(y.begin(), y.end()),
            (std::vector<int>{0, 2, 2, 0, 127, -128, -128, 2, 2}));
}

// QuantizeLinear along axis 1 of [2, 3, 37] runs the vector loop over each 37-element run of a
// channel: the result is the reference's, channel by channel.
TEST(QuantizeLoops, PerAxisQuantizeMatchesTheReferencePerChannel) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[2,3,37]) {
  @scale: f32[3] = [0.5, 0.25, 3.0]
  @zero: i8[3] = [0, -128, 7]
  %y = QuantizeLinear[axis=1](%x, @scale, @zero)
  return %y
}
)";
  const std::vector<float> row = edge_floats();
  std::vector<double> x;
  for (int copy = 0; copy < 6; ++copy) x.insert(x.end(), row.begin(), row.end());
  const Tensor y = run_graph(text, {{"x", kernel_test::floats({2, 3, 37}, x)}})[0];
  const float scales[] = {0.5f, 0.25f, 3.0f};
  const int32_t zeros[] = {0, -128, 7};
  std::vector<double> expected;
  for (int run = 0; run < 6; ++run) {
    std::vector<int8_t> channel(row.size());
    quantize_loops::quantize_reference(row.data(), scales[run % 3], zeros[run % 3], channel.data(),
                                       static_cast<int64_t>(row.size()));
    expected.insert(expected.end(), channel.begin(), channel.end());
  }
  expect_values(y, expected);
}

template <typename T>
void expect_dequantize_matches_reference(int32_t zero) {
  std::vector<T> x;
  for (int v = 0; v < 259; ++v) {
    x.push_back(static_cast<T>(std::is_same_v<T, int32_t> ? v * 40000 - 5000000 : v));
  }
  const auto count = static_cast<int64_t>(x.size());
  std::vector<float> vector(x.size()), reference(x.size());
  quantize_loops::dequantize(x.data(), 0.37f, zero, vector.data(), count);
  quantize_loops::dequantize_reference(x.data(), 0.37f, zero, reference.data(), count);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(vector[i], reference[i]) << "x = " << int64_t{x[i]} << ", zero point " << zero;
  }
}

TEST(QuantizeLoops, DequantizeMatchesTheScalarReference) {
  expect_dequantize_matches_reference<uint8_t>(131);
  expect_dequantize_matches_reference<int8_t>(-7);
  expect_dequantize_matches_reference<int32_t>(12);
}

// Every pair of u8 (or i8) operands, as full runs and with either operand broadcast.
template <typename T>
void expect_add_matches_reference(const quantize_loops::AddRatios& ratios) {
  std::vector<T> a, b;
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      a.push_back(static_cast<T>(x));
      b.push_back(static_cast<T>(y));
    }
  }
  const auto count = static_cast<int64_t>(a.size());
  std::vector<T> vector(a.size()), reference(a.size());
  for (const auto& [a_step, b_step] : {std::pair{1, 1}, {0, 1}, {1, 0}, {0, 0}}) {
    // A broadcast run of 13 (a tail) starting at an odd element.
    const int64_t length = a_step == 1 && b_step == 1 ? count : 13;
    const T* pa = a.data() + (a_step == 0 ? 1001 : 0);
    const T* pb = b.data() + (b_step == 0 ? 777 : 0);
    quantize_loops::qlinear_add(pa, a_step, pb, b_step, ratios, vector.data(), length);
    quantize_loops::qlinear_add_reference(pa, a_step, pb, b_step, ratios, reference.data(), length);
    for (int64_t i = 0; i < length; ++i) {
      ASSERT_EQ(int{vector[i]}, int{reference[i]})
          << "element " << i << " with steps " << a_step << ", " << b_step;
    }
  }
}

TEST(QuantizeLoops, QLinearAddMatchesTheScalarReference) {
  expect_add_matches_reference<uint8_t>(
      quantize_loops::add_ratios(0.0475498848f, 195, 0.0495776571f, 231, 0.0913165733f, 126));
  expect_add_matches_reference<int8_t>(
      quantize_loops::add_ratios(0.02f, -3, 0.5f, 10, 0.01f, -128));
}

// Scales and zero points where the float math (dequantize, add, quantize) and ONNX Runtime's
// differ: a = 4, b = 216 dequantize to -5.3365 and 8.4974, whose sum over c_scale is
// 37.5000153 (115 + 38 = 153), while ONNX Runtime's ratios and fixed part give exactly 152.5
// (152, half to even), as it rounds a few values of lraspp_mobilenet_v3_large_int8.
const char* kQdqAdd = R"(graph g [ai.onnx=13] (%a: u8[2], %b: u8[2]) {
  @as: f32[] = [0.0702175871]
  @az: u8[] = [80]
  @bs: f32[] = [0.0794148743]
  @bz: u8[] = [109]
  @cs: f32[] = [0.084289439]
  @cz: u8[] = [115]
  %af = DequantizeLinear(%a, @as, @az)
  %bf = DequantizeLinear(%b, @bs, @bz)
  %s = Add(%af, %bf)
  %c = QuantizeLinear(%s, @cs, @cz)
  return %c
}
)";

TEST(QLinearAdd, RoundsAsOnnxRuntimeDoesWhereFloatMathDiffers) {
  const std::map<std::string, Tensor> inputs = {
      {"a", make_tensor(DataType::kUInt8, {2}, {4, 80})},
      {"b", make_tensor(DataType::kUInt8, {2}, {216, 109})}};
  Graph graph = parse_graph(kQdqAdd);
  expect_values(Executor(graph).run(inputs)[0], {153, 115});
  ASSERT_EQ(fuse_qdq(graph).summary(),
            "QDQ fusion: 1 Add nodes fused into com.microsoft.QLinearAdd");
  const Tensor c = Executor(graph).run(inputs)[0];
  EXPECT_EQ(c.dtype(), DataType::kUInt8);
  expect_values(c, {152, 115});
}

TEST(QLinearAdd, BroadcastsAPerChannelOperand) {
  const char* text = R"(graph g [ai.onnx=13, com.microsoft=1] (%a: i8[1,2,3], %b: i8[1,2,1]) {
  @as: f32[] = [0.5]
  @az: i8[] = [1]
  @bs: f32[] = [0.25]
  @bz: i8[] = [-2]
  @cs: f32[] = [1.0]
  @cz: i8[] = [3]
  %c = com.microsoft.QLinearAdd(%a, @as, @az, %b, @bs, @bz, @cs, @cz)
  return %c
}
)";
  // Channel 0 adds (10 + 2) / 4 = 3, channel 1 adds (-6 + 2) / 4 = -1; (a - 1) / 2 ties go to
  // even: a = 2 → 0.5 + 3 + 3 = 6.5 → 6.
  const Tensor c =
      run_graph(text, {{"a", make_tensor(DataType::kInt8, {1, 2, 3}, {2, 5, 127, 2, 5, -128})},
                       {"b", make_tensor(DataType::kInt8, {1, 2, 1}, {10, -6})}})[0];
  EXPECT_EQ(c.dtype(), DataType::kInt8);
  expect_values(c, {6, 8, 69, 2, 4, -62});
}

}  // namespace
}  // namespace cleave
