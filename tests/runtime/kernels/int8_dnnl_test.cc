// The oneDNN int8 convolutions and matrix products (constant s8 weights) against the reference
// loops (the same weights given as a graph input): pads, strides, groups, batches, zero points,
// per-channel scales. Weights of the whole s8 range and data of the whole u8 range saturate the
// int16 pair sums of oneDNN's kernels without VNNI: there (CI runs these tests again with
// ONEDNN_MAX_CPU_ISA=AVX2) the weights are split in two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/math/widened_int8.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(int(v));
  return "[" + text + "]";
}

// What the constant form runs on without VNNI: a substring of its implementation.
constexpr const char* kSplit = "weights split in two";
constexpr const char* kWidened = "int16 pairs";
// The one-channel 1-D convolution: widened products below AVX-512, with or without VNNI; on
// AVX-512 with VNNI, oneDNN's int8 matmul over its windows.
constexpr const char* kWidenedConv1d = "int8 conv1d (int16 pairs)";
constexpr const char* kWindowsConv1d = "int8 conv1d as a matmul of its windows";
constexpr const char* kShifted = "s8 data shifted to u8";
// u8 data of zero point 0: one pass over the data clamped at 127 and the sums above it.
constexpr const char* kDataSplit = "data split at 127";
// Depthwise: oneDNN's own kernel, whose depthwise products cannot saturate (no split): its
// AVX2/SSE4.1 kernel, or on AVX-512 without VNNI its AVX-512 one.
constexpr const char* kDepthwise = "jit_uni_int8:";
constexpr const char* kDepthwiseAvx512 = "jit_int8:avx512_core";

struct Case {
  std::string op;  // QLinearConv or ConvInteger.
  std::string attributes;
  int64_t channels_in, channels_out, group;
  std::string data = "u8";                // The data's type: u8 or i8.
  std::vector<int64_t> spatial = {9, 9};  // The data's spatial dims.
  std::vector<int64_t> kernel = {3, 3};   // The weights' spatial dims.
  int64_t batch = 1;
  const char* without_vnni = kSplit;
  int x_zero = 7;  // u8 data's zero point (i8 data's is -9).
  // Of u8 data, how many values are above 127, the rest below (else uniform over 0..255).
  int above = -1;
};

std::string dims(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

std::vector<int64_t> data_shape(const Case& c) {
  std::vector<int64_t> shape = {c.batch, c.channels_in};
  shape.insert(shape.end(), c.spatial.begin(), c.spatial.end());
  return shape;
}

std::vector<int64_t> weight_shape(const Case& c) {
  std::vector<int64_t> shape = {c.channels_out, c.channels_in / c.group};
  shape.insert(shape.end(), c.kernel.begin(), c.kernel.end());
  return shape;
}

// The node's graph with weights `w` either constant (oneDNN) or a graph input (loops).
std::string graph_text(const Case& c, const std::vector<double>& w, bool constant_weights) {
  const std::string w_type = "i8[" + dims(weight_shape(c)) + "]";
  std::string text = "graph g [ai.onnx=13] (%x: " + c.data + "[" + dims(data_shape(c)) + "]" +
                     (constant_weights ? "" : ", %w: " + w_type) + ") {\n";
  const std::string w_ref = constant_weights ? "@w" : "%w";
  if (constant_weights) text += "  @w: " + w_type + " = " + listed(w) + "\n";
  text += c.data == "u8" ? "  @x_zero: u8[] = [" + std::to_string(c.x_zero) + "]\n"
                         : "  @x_zero: i8[] = [-9]\n";
  text += "  @w_zero: i8[] = [0]\n";
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

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

// The oneDNN form runs (natively) or, without VNNI, the kernel `without_vnni` names (the
// widened products where the CPU has AVX2; the one-channel 1-D convolution's below AVX-512).
void expect_fast_form(const Executor& executor, const char* without_vnni) {
  const std::string& implementation = executor.stats().implementations[0];
  const bool avx2_kernels = !isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core);
  const bool widened = quantize_detail::widened_products_available();
  if (without_vnni == kWidenedConv1d && avx2_kernels && widened) {
    EXPECT_NE(implementation.find(kWidenedConv1d), std::string::npos)
        << "below AVX-512: " << implementation;
  } else if (quantize_detail::dnnl_int8_products_exact()) {
    EXPECT_NE(implementation, "") << "the constant form did not run on oneDNN";
    if (without_vnni == kWidenedConv1d && !avx2_kernels) {
      EXPECT_NE(implementation.find(kWindowsConv1d), std::string::npos)
          << "AVX-512 with VNNI: " << implementation;
    }
  } else if (without_vnni == kDepthwise) {
    EXPECT_TRUE(implementation.starts_with(avx2_kernels ? kDepthwise : kDepthwiseAvx512))
        << "without VNNI: " << implementation;
    EXPECT_EQ(implementation.find(kSplit), std::string::npos) << "without VNNI: " << implementation;
  } else if ((without_vnni != kWidened && without_vnni != kWidenedConv1d) || widened) {
    EXPECT_NE(implementation.find(without_vnni), std::string::npos)
        << "without VNNI, expected " << without_vnni << ": " << implementation;
  }
}

// The node on data `x` and weights `w`, constant (oneDNN) against a graph input (the loops).
void expect_dnnl_matches_loops(const Case& c, const std::vector<double>& x,
                               const std::vector<double>& w) {
  // The int8 kernels named by `c`, not the f32 route (int8_f32_route_test.cc) some would take.
  const kernel_test::ScopedEnvironment int8_only("CLEAVE_INT8_F32", "never");
  const DataType x_type = c.data == "u8" ? DataType::kUInt8 : DataType::kInt8;
  const Tensor input = make_tensor(x_type, data_shape(c), x);
  const Tensor weights = make_tensor(DataType::kInt8, weight_shape(c), w);
  Executor dnnl(parse_graph(graph_text(c, w, true)));
  const Tensor fast = dnnl.run({{"x", input}})[0];
  Executor loops(parse_graph(graph_text(c, w, false)));
  const Tensor slow = loops.run({{"x", input}, {"w", weights}})[0];
  expect_fast_form(dnnl, c.without_vnni);
  EXPECT_EQ(loops.stats().implementations[0], "");
  ASSERT_EQ(fast.shape(), slow.shape());
  const std::vector<double> a = fast.to_double_vector(), b = slow.to_double_vector();
  int differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
  EXPECT_EQ(differing, 0) << "of " << a.size() << " elements";
}

void expect_dnnl_matches_loops(const Case& c) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<double> x(static_cast<std::size_t>(count_of(data_shape(c))));
  for (double& v : x) {
    v = byte(rng) - (c.data == "u8" ? 0 : 128);
    if (c.above >= 0) v = int(v) % 128;
  }
  for (int k = 0; k < c.above; ++k) x[(k * 7919 + 13) % x.size()] = 128 + 127 * (k % 2);
  std::vector<double> w(static_cast<std::size_t>(count_of(weight_shape(c))));
  for (double& v : w) v = weight(rng);
  expect_dnnl_matches_loops(c, x, w);
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
  expect_fast_form(executor, kDataSplit);
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

// Depthwise convolutions run on oneDNN's kernel without the split even without VNNI: it
// multiplies them in 32 bits. Full-range weights and data, channels not a multiple of the
// kernel's block of 8, strides and pads. s8 data keeps the shifted split (run directly on
// oneDNN's kernel, 394 of its 1,944 outputs differed from the loops').
TEST(Int8ConvDnnl, DepthwiseQLinearConvMatchesTheLoopsWithoutTheSplit) {
  Case c{"QLinearConv", "[group=20, pads=[1, 1, 1, 1]]", 20, 20, 20};
  c.spatial = {11, 13};
  c.without_vnni = kDepthwise;
  expect_dnnl_matches_loops(c);
}

TEST(Int8ConvDnnl, StridedDepthwiseConvIntegerMatchesTheLoopsWithoutTheSplit) {
  Case c{"ConvInteger", "[group=16, strides=[2, 2], pads=[2, 2, 2, 2]]", 16, 16, 16};
  c.kernel = {5, 5};
  c.spatial = {14, 14};
  c.without_vnni = kDepthwise;
  expect_dnnl_matches_loops(c);
}

TEST(Int8ConvDnnl, S8DataDepthwiseQLinearConvMatchesTheLoops) {
  Case c{"QLinearConv", "[group=24, pads=[1, 1, 1, 1]]", 24, 24, 24};
  c.data = "i8";
  c.without_vnni = kShifted;
  expect_dnnl_matches_loops(c);
}

// Without VNNI, s8 data runs on the u8 split path, shifted by 128 with its zero point; the
// padding must still read as the zero point.
TEST(Int8ConvDnnl, S8DataQLinearConvWithPadsMatchesTheLoops) {
  Case c{"QLinearConv", "[pads=[1, 1, 1, 1]]", 8, 16, 1};
  c.data = "i8";
  c.without_vnni = kShifted;
  expect_dnnl_matches_loops(c);
}

TEST(Int8ConvDnnl, S8DataConvIntegerMatchesTheLoops) {
  Case c{"ConvInteger", "[pads=[0, 1, 2, 1]]", 4, 8, 1};
  c.data = "i8";
  c.without_vnni = kShifted;
  expect_dnnl_matches_loops(c);
}

// Without VNNI, u8 data of zero point 0 takes one pass over the data clamped at 127 and adds the
// sums of the values above it: oneDNN's pass over them where they are many (full-range data,
// half above 127), else their products row by row (`few` values above, 128 and 255, below
// where the pass takes over). A skipped or misplaced excess sum changes most outputs. Pads,
// strides, dilations, groups, batches, 1-D to 3-D.
void expect_clamped_matches_loops(Case c, int few = 6) {
  c.x_zero = 0;
  c.without_vnni = kDataSplit;
  for (int above : {-1, few}) {
    SCOPED_TRACE(above < 0 ? "full-range data" : "few above 127");
    c.above = above;
    expect_dnnl_matches_loops(c);
  }
}

TEST(Int8ConvDnnl, ClampedDataQLinearConvWithPadsMatchesTheLoops) {
  expect_clamped_matches_loops({"QLinearConv", "[pads=[1, 1, 1, 1]]", 8, 16, 1});
}

TEST(Int8ConvDnnl, ClampedDataGroupedStridedQLinearConvMatchesTheLoops) {
  Case c{"QLinearConv", "[group=2, strides=[2, 3], pads=[2, 0, 1, 2]]", 8, 16, 2};
  c.spatial = {13, 11};
  c.batch = 2;
  expect_clamped_matches_loops(c);
}

TEST(Int8ConvDnnl, ClampedDataDilatedQLinearConvMatchesTheLoops) {
  Case c{"QLinearConv", "[dilations=[2, 1], pads=[2, 1, 2, 1]]", 8, 8, 1};
  c.spatial = {12, 10};
  expect_clamped_matches_loops(c);
}

// ConvInteger's int32 sums, plain, and 1x1 (oneDNN's 1x1 kernel).
TEST(Int8ConvDnnl, ClampedDataConvIntegerMatchesTheLoops) {
  expect_clamped_matches_loops({"ConvInteger", "[pads=[0, 1, 2, 1]]", 4, 8, 1});
  Case one_by_one{"QLinearConv", "[strides=[2, 2]]", 16, 24, 1};
  one_by_one.kernel = {1, 1};
  expect_clamped_matches_loops(one_by_one);
}

TEST(Int8ConvDnnl, ClampedData3dAnd1dQLinearConvsMatchTheLoops) {
  Case volume{"QLinearConv", "[pads=[1, 0, 1, 1, 0, 1], strides=[1, 2, 1]]", 4, 8, 1};
  volume.spatial = {5, 6, 7};
  volume.kernel = {3, 2, 3};
  expect_clamped_matches_loops(volume);
  Case line{"QLinearConv", "[pads=[2, 1], dilations=[3]]", 6, 10, 1};
  line.spatial = {200};
  line.kernel = {3};
  expect_clamped_matches_loops(line);
}

// Three convolutions in a row: the second and third read u8 data (zero point 0) in the layout
// oneDNN wrote it (channels-last), the second writes its sums so too, and data and weights take
// the extremes (255, -128, 127), where the clamped products come closest to int16's limits
// (127·128·2). The loops' graph also returns the inner outputs (a graph output is plain, so
// oneDNN's graph does not).
std::string chained_text(const std::vector<double>& w1, const std::vector<double>& w2,
                         const std::string& h_scale, const std::string& g_scale, bool constant) {
  std::string text = "graph g [ai.onnx=13] (%x: u8[2,8,10,10]" +
                     std::string(constant ? "" : ", %w1: i8[16,8,3,3], %w2: i8[16,16,3,3]") +
                     ") {\n";
  if (constant) {
    text += "  @w1: i8[16,8,3,3] = " + listed(w1) + "\n  @w2: i8[16,16,3,3] = " + listed(w2) + "\n";
  }
  const std::string a = constant ? "@w1" : "%w1", b = constant ? "@w2" : "%w2";
  text +=
      "  @zero: u8[] = [0]\n  @w_zero: i8[] = [0]\n  @x_scale: f32[] = [0.05]\n"
      "  @w_scale: f32[] = [0.01]\n  @y_scale: f32[] = [0.02]\n  @h_scale: f32[] = [" +
      h_scale + "]\n  @g_scale: f32[] = [" + g_scale +
      "]\n"
      "  %h = QLinearConv[pads=[1, 1, 1, 1]](%x, @x_scale, @zero, " +
      a +
      ", @w_scale, @w_zero, @h_scale, @zero)\n"
      "  %g = QLinearConv[pads=[1, 1, 1, 1]](%h, @h_scale, @zero, " +
      b +
      ", @w_scale, @w_zero, @g_scale, @zero)\n"
      "  %y = QLinearConv[pads=[1, 1, 1, 1], strides=[2, 2]](%g, @g_scale, @zero, " +
      b + ", @w_scale, @w_zero, @y_scale, @zero)\n  return %y" + (constant ? "" : ", %h, %g") +
      "\n}\n";
  return text;
}

// `h_scale`, `g_scale`: the inner outputs' scales, which set how many of their values pass 127
// (between `fewest` and `most` of each one's 3,200); `x_above`: the share of 255 in the data.
void expect_chain_matches_loops(const std::string& h_scale, const std::string& g_scale, int fewest,
                                int most, double x_above) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, 3), weight(-128, 127);
  auto extreme_weights = [&](std::size_t count) {
    std::vector<double> w(count);
    for (double& v : w) {
      const int k = pick(rng);
      v = k == 0 ? -128 : k == 1 ? 127 : weight(rng);
    }
    return w;
  };
  const std::vector<double> w1 = extreme_weights(16 * 8 * 9), w2 = extreme_weights(16 * 16 * 9);
  std::vector<double> x(2 * 8 * 10 * 10);
  std::uniform_real_distribution<double> share(0, 1);
  for (double& v : x) v = share(rng) < x_above ? 255 : 8 * pick(rng);
  const Tensor input = make_tensor(DataType::kUInt8, {2, 8, 10, 10}, x);
  Executor dnnl(parse_graph(chained_text(w1, w2, h_scale, g_scale, true)));
  const Tensor fast = dnnl.run({{"x", input}})[0];
  Executor loops(parse_graph(chained_text(w1, w2, h_scale, g_scale, false)));
  const std::vector<Tensor> slow_outputs =
      loops.run({{"x", input},
                 {"w1", make_tensor(DataType::kInt8, {16, 8, 3, 3}, w1)},
                 {"w2", make_tensor(DataType::kInt8, {16, 16, 3, 3}, w2)}});
  const Tensor& slow = slow_outputs[0];
  if (!quantize_detail::dnnl_int8_products_exact()) {
    for (const std::string& implementation : dnnl.stats().implementations) {
      EXPECT_NE(implementation.find(kDataSplit), std::string::npos) << implementation;
    }
  }
  ASSERT_EQ(fast.shape(), slow.shape());
  const std::vector<double> a = fast.to_double_vector(), b = slow.to_double_vector();
  int differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differing += a[i] != b[i];
  EXPECT_EQ(differing, 0) << "of " << a.size() << " elements";
  for (std::size_t inner : {1, 2}) {
    int above = 0;
    for (double h : slow_outputs[inner].to_double_vector()) above += h > 127;
    EXPECT_GE(above, fewest) << "of convolution " << inner + 1 << "'s data, above 127";
    EXPECT_LE(above, most) << "of convolution " << inner + 1 << "'s data, above 127";
  }
}

// Many above 127 (oneDNN's pass over them), and few (row by row).
TEST(Int8ConvDnnl, ClampedDataOfOtherConvolutionsAtTheExtremesMatchesTheLoops) {
  expect_chain_matches_loops("0.05", "0.05", 400, 3200, 0.5);
  expect_chain_matches_loops("0.3", "3.0", 10, 150, 0.02);
}

// Weights above 1 MiB: without VNNI the rows read them where oneDNN packed them, not from a
// copy. On AVX2, 256 output channels a group lie in blocks of 8 (read 8 at a time); 252 in
// blocks of 4 (read one by one).
TEST(Int8ConvDnnl, ClampedDataOfWeightsAboveAMebibyteMatchesTheLoops) {
  for (int64_t per_group : {256, 252}) {
    SCOPED_TRACE(per_group);
    Case c{"QLinearConv", "[group=2, pads=[1, 0, 1, 2]]", 528, 2 * per_group, 2};
    c.spatial = {5, 6};  // 2·per_group x 264 x 3 x 3 weights: 1.14–1.16 MiB.
    expect_clamped_matches_loops(c);
  }
}

// Paired (clamped_scan.h): oneDNN's AVX2 kernels multiply channels 2j and 2j+1 of a group into
// one int16 pair sum. The data is 255 on the channels `high` and 60-127 elsewhere, the weights
// 100-127: every pair of channels (2j, 2j+1) passes 255 (unclamped, most saturate: up to
// 382·127), and channels 2j+1 and 2j+2 of a pair of high ones, were they multiplied together, would
// saturate after the clamp too (255 + 128, times 100 at least). ConvInteger: its int32 sums are
// compared (requantized, these all-positive sums would clip to 255). 1x1 and 3x3, and 2 groups of 4
// channels (oneDNN's AVX2 kernel took no grouped convolution of 3 or 6 channels a group: those ran
// the loops).
TEST(Int8ConvDnnl, ClampedDataPairsTheChannelsOneDnnMultipliesTogether) {
  struct Paired {
    Case c;
    std::vector<int64_t> high;
  };
  Case one_by_one{"ConvInteger", "", 8, 16, 1},
      three{"ConvInteger", "[pads=[1, 1, 1, 1]]", 8, 8, 1};
  one_by_one.kernel = {1, 1};
  Case groups{"ConvInteger", "[group=2, pads=[1, 1, 1, 1]]", 8, 16, 2};
  for (auto [c, high] : {Paired{one_by_one, {1, 2, 5, 6}}, Paired{three, {1, 2, 5, 6}},
                         Paired{groups, {1, 2, 5, 6}}}) {
    SCOPED_TRACE(c.attributes + " " + std::to_string(c.kernel[0]) + "x" +
                 std::to_string(c.kernel[1]));
    c.x_zero = 0;
    c.without_vnni = kDataSplit;
    c.batch = 2;
    std::mt19937 rng(8);
    std::uniform_int_distribution<int> low(60, 127), weight(100, 127);
    const std::vector<int64_t> shape = data_shape(c);
    const int64_t plane = shape[2] * shape[3];
    std::vector<double> x(static_cast<std::size_t>(count_of(shape)));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const int64_t channel = static_cast<int64_t>(i) / plane % c.channels_in;
      const bool is_high = std::find(high.begin(), high.end(), channel) != high.end();
      x[i] = is_high ? 255 : low(rng);
    }
    std::vector<double> w(static_cast<std::size_t>(count_of(weight_shape(c))));
    for (double& v : w) v = weight(rng);
    expect_dnnl_matches_loops(c, x, w);
  }
}

// An STFT-like 1-D convolution: one input channel, a long strided window (odd length), output
// channels not a multiple of 8; without VNNI, cleave's widened products.
TEST(Int8ConvDnnl, StridedConv1dOfOneChannelMatchesTheLoops) {
  Case c{"QLinearConv", "[strides=[16]]", 1, 21, 1};
  c.spatial = {403};
  c.kernel = {37};
  c.batch = 2;
  c.without_vnni = kWidenedConv1d;
  expect_dnnl_matches_loops(c);
}

TEST(Int8ConvDnnl, S8DataConvIntegerConv1dOfOneChannelMatchesTheLoops) {
  Case c{"ConvInteger", "[strides=[5]]", 1, 9, 1};
  c.data = "i8";
  c.spatial = {120};
  c.kernel = {20};
  c.without_vnni = kWidenedConv1d;
  expect_dnnl_matches_loops(c);
}

// A product of data [.., K] (u8[2,5,16] unless told) and i8[K,24] weights, constant (oneDNN)
// or a graph input.
struct Product {
  std::string op;
  std::string data = "u8";
  std::vector<int64_t> shape = {2, 5, 16};
  const char* without_vnni = kWidened;
  bool extremes = false;  // Data and weights at their ranges' ends (int16 pair sums overflow).
  int threads = 1;
};

std::string matmul_text(const Product& c, const std::vector<double>& w, bool constant) {
  const std::string b_type = "i8[" + std::to_string(c.shape.back()) + ",24]";
  std::string text = "graph g [ai.onnx=13, com.microsoft=1] (%a: " + c.data + "[" + dims(c.shape) +
                     "]" + (constant ? "" : ", %b: " + b_type) + ") {\n";
  if (constant) text += "  @b: " + b_type + " = " + listed(w) + "\n";
  const std::string b = constant ? "@b" : "%b";
  text += c.data == "u8" ? "  @a_zero: u8[] = [9]\n" : "  @a_zero: i8[] = [-3]\n";
  text += "  @b_zero: i8[] = [0]\n";
  if (c.op == "QGemm") {
    std::string bias;
    for (int n = 0; n < 24; ++n) bias += (n ? ", " : "") + std::to_string(37 * n - 400);
    text += "  @a_scale: f32[] = [0.05]\n  @b_scale: f32[] = [0.002]\n  @c: i32[24] = [" + bias +
            "]\n  @y_scale: f32[] = [0.03]\n  @y_zero: u8[] = [128]\n" +
            "  %y = com.microsoft.QGemm(%a, @a_scale, @a_zero, " + b +
            ", @b_scale, @b_zero, @c, @y_scale, @y_zero)\n";
  } else if (c.op == "QLinearMatMul") {
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

void expect_dnnl_matmul_matches_loops(const Product& c) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  const int64_t depth = c.shape.back();
  std::vector<double> a(static_cast<std::size_t>(count_of(c.shape)));
  std::vector<double> w(static_cast<std::size_t>(depth * 24));
  // At the ends: u8 data 0 or 255 (zero point 9), i8 data -128 or 127 (zero point -3).
  std::bernoulli_distribution coin(0.5);
  for (double& v : a) {
    v = (c.extremes ? (coin(rng) ? 255 : 0) : byte(rng)) - (c.data == "u8" ? 0 : 128);
  }
  for (double& v : w) v = c.extremes ? (coin(rng) ? 127 : -128) : weight(rng);
  const Tensor input = make_tensor(c.data == "u8" ? DataType::kUInt8 : DataType::kInt8, c.shape, a);
  ExecutorOptions options;
  options.threads = c.threads;
  Executor dnnl(parse_graph(matmul_text(c, w, true)), options);
  const Tensor fast = dnnl.run({{"a", input}})[0];
  Executor loops(parse_graph(matmul_text(c, w, false)));
  const Tensor slow =
      loops.run({{"a", input}, {"b", make_tensor(DataType::kInt8, {depth, 24}, w)}})[0];
  expect_fast_form(dnnl, c.without_vnni);
  EXPECT_EQ(loops.stats().implementations[0], "");
  ASSERT_EQ(fast.shape(), slow.shape());
  const std::vector<double> x = fast.to_double_vector(), y = slow.to_double_vector();
  int differing = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differing += x[i] != y[i];
  EXPECT_EQ(differing, 0) << "of " << x.size() << " elements";
}

TEST(Int8MatmulDnnl, QLinearMatMulWithPerColumnScalesMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops({"QLinearMatMul"});
}

TEST(Int8MatmulDnnl, QGemmWithBiasMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops({"QGemm"});
}

TEST(Int8MatmulDnnl, MatMulIntegerMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops({"MatMulInteger"});
}

// Many rows and odd sizes (37 rows of depth 75), data and weights at their ranges' ends, where
// every pair of u8·s8 products overflows an int16 sum: without VNNI, the widened products.
TEST(Int8MatmulDnnl, ManyRowsAtTheRangesEndsMatchTheLoops) {
  expect_dnnl_matmul_matches_loops({.op = "QLinearMatMul", .shape = {37, 75}, .extremes = true});
  expect_dnnl_matmul_matches_loops({.op = "QGemm", .shape = {37, 75}, .extremes = true});
  expect_dnnl_matmul_matches_loops(
      {.op = "MatMulInteger", .data = "i8", .shape = {3, 13, 75}, .extremes = true});
}

// 400 rows of depth 301, 2.9 M products: the widened kernel's team of two shares the column
// blocks and the requantization.
TEST(Int8MatmulDnnl, ATwoThreadProductMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops({.op = "QGemm", .shape = {2, 200, 301}, .threads = 2});
  expect_dnnl_matmul_matches_loops({.op = "QLinearMatMul", .shape = {2, 200, 301}, .threads = 2});
}

// One row (a classifier's last Gemm), an odd depth: without VNNI, cleave's widened products.
TEST(Int8MatmulDnnl, OneRowQGemmMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops({"QGemm", "u8", {1, 17}, kWidened});
}

// s8 data (which the split cannot take) at many rows: without VNNI, the widened products.
TEST(Int8MatmulDnnl, S8DataQLinearMatMulMatchesTheLoops) {
  expect_dnnl_matmul_matches_loops({"QLinearMatMul", "i8", {3, 7, 17}, kWidened});
}

}  // namespace
}  // namespace cleave
