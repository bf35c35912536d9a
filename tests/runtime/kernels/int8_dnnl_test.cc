// The oneDNN int8 convolutions and matrix products (constant s8 weights) against the reference
// loops (the same weights given as a graph input): pads, strides, groups, batches, zero points,
// per-channel scales. Weights of the whole s8 range and data of the whole u8 range saturate the
// int16 pair sums of oneDNN's kernels without VNNI: there (CI runs these tests again with
// ONEDNN_MAX_CPU_ISA=AVX2) the weights are split in two.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"
#include "runtime/kernels/math/quantize_util.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(int(v));
  return "[" + text + "]";
}

struct Case {
  std::string op;  // QLinearConv or ConvInteger.
  std::string attributes;
  int64_t channels_in, channels_out, group;
};

// The node's graph with weights `w` either constant (oneDNN) or a graph input (loops).
std::string graph_text(const Case& c, const std::vector<double>& w, bool constant_weights) {
  const std::string w_type = "i8[" + std::to_string(c.channels_out) + "," +
                             std::to_string(c.channels_in / c.group) + ",3,3]";
  std::string text = "graph g [ai.onnx=13] (%x: u8[1," + std::to_string(c.channels_in) + ",9,9]" +
                     (constant_weights ? "" : ", %w: " + w_type) + ") {\n";
  const std::string w_ref = constant_weights ? "@w" : "%w";
  if (constant_weights) text += "  @w: " + w_type + " = " + listed(w) + "\n";
  text += "  @x_zero: u8[] = [7]\n  @w_zero: i8[] = [0]\n";
  if (c.op == "QLinearConv") {
    std::vector<double> scales, bias;
    for (int64_t m = 0; m < c.channels_out; ++m) {
      scales.push_back(m + 1);
      bias.push_back(100 * m - 150);
    }
    std::string scale_text;
    for (double s : scales)
      scale_text += (scale_text.empty() ? "" : ", ") + std::to_string(s * 0.001);
    text += "  @x_scale: f32[] = [0.05]\n  @w_scale: f32[" + std::to_string(c.channels_out) +
            "] = [" + scale_text + "]\n  @y_scale: f32[] = [0.02]\n  @y_zero: u8[] = [3]\n" +
            "  @bias: i32[" + std::to_string(c.channels_out) + "] = " + listed(bias) + "\n" +
            "  %y = QLinearConv" + c.attributes + "(%x, @x_scale, @x_zero, " + w_ref +
            ", @w_scale, @w_zero, @y_scale, @y_zero, @bias)\n";
  } else {
    text += "  %y = ConvInteger" + c.attributes + "(%x, " + w_ref + ", @x_zero, @w_zero)\n";
  }
  return text + "  return %y\n}\n";
}

void expect_dnnl_matches_loops(const Case& c) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<double> x(static_cast<std::size_t>(c.channels_in * 81));
  for (double& v : x) v = byte(rng);
  std::vector<double> w(static_cast<std::size_t>(c.channels_out * c.channels_in / c.group * 9));
  for (double& v : w) v = weight(rng);
  const Tensor input = make_tensor(DataType::kUInt8, {1, c.channels_in, 9, 9}, x);
  const Tensor weights =
      make_tensor(DataType::kInt8, {c.channels_out, c.channels_in / c.group, 3, 3}, w);
  Executor dnnl(parse_graph(graph_text(c, w, true)));
  const Tensor fast = dnnl.run({{"x", input}})[0];
  Executor loops(parse_graph(graph_text(c, w, false)));
  const Tensor slow = loops.run({{"x", input}, {"w", weights}})[0];
  if (quantize_detail::dnnl_int8_products_exact()) {
    EXPECT_NE(dnnl.stats().implementations[0], "") << "the constant form did not run on oneDNN";
  } else {
    EXPECT_NE(dnnl.stats().implementations[0].find("weights split in two"), std::string::npos)
        << "without VNNI: " << dnnl.stats().implementations[0];
  }
  EXPECT_EQ(loops.stats().implementations[0], "");
  ASSERT_EQ(fast.shape(), slow.shape());
  const std::vector<double> a = fast.to_double_vector(), b = slow.to_double_vector();
  int differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
  EXPECT_EQ(differing, 0) << "of " << a.size() << " elements";
}

TEST(Int8ConvDnnl, RoundsBeforeAddingTheZeroPoint) {
  // 1 × 0.49999997 rounds to 0, so y is the zero point 101; adding 101 first gives 101.5 in
  // float, which rounds to 102.
  const char* text = R"(graph g [ai.onnx=13] (%x: u8[1,1,1,1]) {
  @x_scale: f32[] = [0.49999997]
  @x_zero: u8[] = [0]
  @w: i8[1,1,1,1] = [1]
  @w_scale: f32[] = [1.0]
  @w_zero: i8[] = [0]
  @y_scale: f32[] = [1.0]
  @y_zero: u8[] = [101]
  %y = QLinearConv(%x, @x_scale, @x_zero, @w, @w_scale, @w_zero, @y_scale, @y_zero)
  return %y
}
)";
  Executor executor(parse_graph(text));
  const Tensor y = executor.run({{"x", make_tensor(DataType::kUInt8, {1, 1, 1, 1}, {1})}})[0];
  if (quantize_detail::dnnl_int8_products_exact()) {
    EXPECT_NE(executor.stats().implementations[0], "") << "the constant form did not run on oneDNN";
  } else {
    EXPECT_NE(executor.stats().implementations[0].find("weights split in two"), std::string::npos)
        << "without VNNI: " << executor.stats().implementations[0];
  }
  EXPECT_EQ(y.data<uint8_t>()[0], 101);
}

TEST(Int8ConvDnnl, QLinearConvWithPadsMatchesTheLoops) {
  expect_dnnl_matches_loops({"QLinearConv", "[pads=[1, 1, 1, 1]]", 8, 16, 1});
}

TEST(Int8ConvDnnl, GroupedStridedQLinearConvMatchesTheLoops) {
  expect_dnnl_matches_loops({"QLinearConv", "[group=2, strides=[2, 2]]", 8, 8, 2});
}

TEST(Int8ConvDnnl, ConvIntegerWithPadsMatchesTheLoops) {
  expect_dnnl_matches_loops({"ConvInteger", "[pads=[1, 1, 1, 1]]", 4, 8, 1});
}

// A product of u8[2,5,16] data and i8[16,24] weights, constant (oneDNN) or a graph input.
std::string matmul_text(const std::string& op, const std::vector<double>& w, bool constant) {
  std::string text = std::string("graph g [ai.onnx=13, com.microsoft=1] (%a: u8[2,5,16]") +
                     (constant ? "" : ", %b: i8[16,24]") + ") {\n";
  if (constant) text += "  @b: i8[16,24] = " + listed(w) + "\n";
  const std::string b = constant ? "@b" : "%b";
  text += "  @a_zero: u8[] = [9]\n  @b_zero: i8[] = [0]\n";
  if (op == "QGemm") {
    std::string bias;
    for (int n = 0; n < 24; ++n) bias += (n ? ", " : "") + std::to_string(37 * n - 400);
    text += "  @a_scale: f32[] = [0.05]\n  @b_scale: f32[] = [0.002]\n  @c: i32[24] = [" + bias +
            "]\n  @y_scale: f32[] = [0.03]\n  @y_zero: u8[] = [128]\n" +
            "  %y = com.microsoft.QGemm(%a, @a_scale, @a_zero, " + b +
            ", @b_scale, @b_zero, @c, @y_scale, @y_zero)\n";
  } else if (op == "QLinearMatMul") {
    std::string scales;
    for (int n = 0; n < 24; ++n) scales += (n ? ", " : "") + std::to_string(0.001 * (n + 1));
    text += "  @a_scale: f32[] = [0.05]\n  @b_scale: f32[24] = [" + scales +
            "]\n  @y_scale: f32[] = [0.03]\n  @y_zero: u8[] = [128]\n" +
            "  %y = QLinearMatMul(%a, @a_scale, @a_zero, " + b +
            ", @b_scale, @b_zero, @y_scale, @y_zero)\n";
  } else {
    text += "  %y = MatMulInteger(%a, " + b + ", @a_zero, @b_zero)\n";
  }
  return text + "  return %y\n}\n";
}

void expect_dnnl_matmul_matches_loops(const std::string& op) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<double> a(2 * 5 * 16), w(16 * 24);
  for (double& v : a) v = byte(rng);
  for (double& v : w) v = weight(rng);
  const Tensor input = make_tensor(DataType::kUInt8, {2, 5, 16}, a);
  Executor dnnl(parse_graph(matmul_text(op, w, true)));
  const Tensor fast = dnnl.run({{"a", input}})[0];
  Executor loops(parse_graph(matmul_text(op, w, false)));
  const Tensor slow =
      loops.run({{"a", input}, {"b", make_tensor(DataType::kInt8, {16, 24}, w)}})[0];
  if (quantize_detail::dnnl_int8_products_exact()) {
    EXPECT_NE(dnnl.stats().implementations[0], "") << "the constant form did not run on oneDNN";
  } else {
    EXPECT_NE(dnnl.stats().implementations[0].find("weights split in two"), std::string::npos)
        << "without VNNI: " << dnnl.stats().implementations[0];
  }
  EXPECT_EQ(loops.stats().implementations[0], "");
  ASSERT_EQ(fast.shape(), slow.shape());
  const std::vector<double> x = fast.to_double_vector(), y = slow.to_double_vector();
  int differing = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differing += x[i] != y[i];
  EXPECT_EQ(differing, 0) << "of " << x.size() << " elements";
}

TEST(Int8MatmulDnnl, QLinearMatMulWithPerColumnScalesMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops("QLinearMatMul");
}

TEST(Int8MatmulDnnl, QGemmWithBiasMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops("QGemm");
}

TEST(Int8MatmulDnnl, MatMulIntegerMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops("MatMulInteger");
}

}  // namespace
}  // namespace cleave
