// The f32 route of int8 convolutions (f32_int8_conv.h): refused past the 2^24 bound on its
// partial sums, and the int8 loops' output bit for bit where taken (nonzero zero points, u8 and
// s8 data, per-tensor and per-channel scales, groups, depthwise, 1-D to 3-D, channels-last
// chains, two threads).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/nn/f32_int8_conv.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;
using quantize_detail::f32_sums_exact;
using quantize_detail::largest_deviation;

constexpr const char* kF32 = "(int8 as exact f32)";

// CLEAVE_INT8_F32 for one scope.
class ScopedRoute : public kernel_test::ScopedEnvironment {
 public:
  explicit ScopedRoute(const char* value) : ScopedEnvironment("CLEAVE_INT8_F32", value) {}
};

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

std::string dims(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

struct Case {
  std::string op = "QLinearConv";  // Or ConvInteger.
  std::string attributes;
  int64_t channels_in = 8, channels_out = 16, group = 1;
  std::vector<int64_t> spatial = {9, 9}, kernel = {3, 3};
  int64_t batch = 1;
  std::string data = "u8";  // u8 or i8.
  int x_zero = 7;
  int w_zero = 0;
  bool per_channel = true;  // Weight scales per output channel, else one.
  int threads = 1;
  int weight_low = -127, weight_high = 127;
};

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

// The node with weights `w` constant (the f32 route may take it) or a graph input (the loops).
std::string graph_text(const Case& c, const std::vector<double>& w, bool constant_weights) {
  const std::string w_type = "i8[" + dims(weight_shape(c)) + "]";
  std::string text = "graph g [ai.onnx=13] (%x: " + c.data + "[" + dims(data_shape(c)) + "]" +
                     (constant_weights ? "" : ", %w: " + w_type) + ") {\n";
  const std::string w_ref = constant_weights ? "@w" : "%w";
  if (constant_weights) text += "  @w: " + w_type + " = " + listed(w) + "\n";
  text += "  @x_zero: " + c.data + "[] = [" + std::to_string(c.x_zero) + "]\n";
  text += "  @w_zero: i8[] = [" + std::to_string(c.w_zero) + "]\n";
  if (c.op == "ConvInteger") {
    text += "  %y = ConvInteger" + c.attributes + "(%x, " + w_ref + ", @x_zero, @w_zero)\n";
    return text + "  return %y\n}\n";
  }
  std::vector<double> scales, bias;
  for (int64_t m = 0; m < c.channels_out; ++m) {
    scales.push_back(0.001 * double(m % 5 + 1));
    bias.push_back(double(97 * m - 1500));
  }
  if (!c.per_channel) scales.resize(1);
  text += "  @x_scale: f32[] = [0.05]\n  @w_scale: f32[" + std::to_string(scales.size()) +
          "] = " + listed(scales) + "\n  @y_scale: f32[] = [0.17]\n  @y_zero: u8[] = [121]\n" +
          "  @bias: i32[" + std::to_string(c.channels_out) + "] = " + listed(bias) + "\n" +
          "  %y = QLinearConv" + c.attributes + "(%x, @x_scale, @x_zero, " + w_ref +
          ", @w_scale, @w_zero, @y_scale, @y_zero, @bias)\n";
  return text + "  return %y\n}\n";
}

// The f32 route (CLEAVE_INT8_F32=always) against the loops on data `x`: the same bits, not a
// constant output, and the route taken exactly where `expect_route`.
void expect_route_matches_loops(const Case& c, const std::vector<double>& x,
                                const std::vector<double>& w, bool expect_route = true) {
  const ScopedRoute always("always");
  const DataType x_type = c.data == "u8" ? DataType::kUInt8 : DataType::kInt8;
  const Tensor input = make_tensor(x_type, data_shape(c), x);
  ExecutorOptions options;
  options.threads = c.threads;
  Executor route(parse_graph(graph_text(c, w, true)), options);
  const Tensor fast = route.run({{"x", input}})[0];
  Executor loops(parse_graph(graph_text(c, w, false)), options);
  const Tensor slow =
      loops.run({{"x", input}, {"w", make_tensor(DataType::kInt8, weight_shape(c), w)}})[0];
  const std::string& implementation = route.stats().implementations[0];
  EXPECT_EQ(implementation.find(kF32) != std::string::npos, expect_route) << implementation;
  EXPECT_EQ(loops.stats().implementations[0], "");
  ASSERT_EQ(fast.shape(), slow.shape());
  const std::vector<double> a = fast.to_double_vector(), b = slow.to_double_vector();
  int differing = 0, distinct = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    differing += a[i] != b[i];
    distinct += b[i] != b[0];
  }
  EXPECT_EQ(differing, 0) << "of " << a.size() << " elements";
  EXPECT_GT(distinct, 0) << "a constant output would hide misplaced sums";
}

void expect_route_matches_loops(const Case& c) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255), weight(c.weight_low, c.weight_high);
  std::vector<double> x(static_cast<std::size_t>(count_of(data_shape(c))));
  for (double& v : x) v = byte(rng) - (c.data == "u8" ? 0 : 128);
  std::vector<double> w(static_cast<std::size_t>(count_of(weight_shape(c))));
  for (double& v : w) v = weight(rng);
  expect_route_matches_loops(c, x, w);
}

TEST(Int8F32Route, TheBoundIsKTimes255Times128For255DataAndWeightsOf128) {
  EXPECT_EQ(largest_deviation(DataType::kUInt8, 0), 255);
  EXPECT_EQ(largest_deviation(DataType::kUInt8, 128), 128);
  EXPECT_EQ(largest_deviation(DataType::kUInt8, 200), 200);
  EXPECT_EQ(largest_deviation(DataType::kInt8, 0), 128);
  EXPECT_EQ(largest_deviation(DataType::kInt8, -9), 136);
  // 514 · 255 · 128 = 16,776,960 < 2^24; 515 · 255 · 128 passes it.
  const std::vector<int32_t> zero{0, 0};
  for (int64_t k : {514, 515}) {
    const std::vector<double> w(static_cast<std::size_t>(2 * k), -128);
    const Tensor weights = make_tensor(DataType::kInt8, {2, k}, w);
    EXPECT_EQ(f32_sums_exact(weights, zero, 255), k == 514) << "K " << k;
  }
  // The bound is on each channel's Σ|w − w_zero|: one channel past it refuses the whole.
  std::vector<double> w(2 * 600, 1);
  for (int k = 0; k < 515; ++k) w[600 + k] = -128;
  EXPECT_TRUE(f32_sums_exact(make_tensor(DataType::kInt8, {2, 600}, w), {0, 0}, 255) == false);
  // A weight zero point counts: w − (−3) of weights 125 is 128.
  const Tensor shifted = make_tensor(DataType::kInt8, {1, 515}, std::vector<double>(515, 125));
  EXPECT_TRUE(f32_sums_exact(shifted, {0}, 255));
  EXPECT_FALSE(f32_sums_exact(shifted, {-3}, 255));
}

// A 1x1 convolution of K = 515 input channels, every weight −128 and the data at 255 of zero
// point 0: its sums pass 2^24, so the route must refuse it (else the f32 sums would round); at
// K = 514 they reach 514 · 255 · −128 = −16,776,960 and the route gives the loops' bits.
TEST(Int8F32Route, RefusedJustPastTheBoundAndExactJustBelowIt) {
  for (int64_t k : {514, 515}) {
    SCOPED_TRACE("K " + std::to_string(k));
    Case c;
    c.op = "ConvInteger";
    c.channels_in = k;
    c.channels_out = 2;
    c.kernel = {1, 1};
    c.spatial = {3, 2};
    c.x_zero = 0;
    std::vector<double> x(static_cast<std::size_t>(k * 6), 255);
    for (int64_t i = 0; i < k; ++i) x[static_cast<std::size_t>(i * 6 + 5)] = 1;  // Not constant.
    const std::vector<double> w(static_cast<std::size_t>(2 * k), -128);
    expect_route_matches_loops(c, x, w, k == 514);
  }
}

TEST(Int8F32Route, NeverAndAutoPoliciesAndBadValues) {
  EXPECT_EQ(quantize_detail::parse_f32_route("", "X"), quantize_detail::F32Route::kAuto);
  EXPECT_EQ(quantize_detail::parse_f32_route("never", "X"), quantize_detail::F32Route::kNever);
  try {
    quantize_detail::parse_f32_route("sometimes", "CLEAVE_INT8_F32");
    FAIL() << "no error for 'sometimes'";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CLEAVE_INT8_F32"), std::string::npos) << message;
    EXPECT_NE(message.find("'sometimes'"), std::string::npos) << message;
  }
  // An image convolution of u8 data with a zero point: by default the route only without VNNI.
  Case c;
  c.channels_in = 3;
  c.spatial = {12, 12};
  const std::string text = graph_text(c, std::vector<double>(16 * 3 * 9, 5), true);
  const Tensor input =
      make_tensor(DataType::kUInt8, data_shape(c), std::vector<double>(count_of(data_shape(c)), 9));
  for (const char* value : {static_cast<const char*>(nullptr), "never"}) {
    const ScopedRoute route(value);
    Executor executor(parse_graph(text));
    executor.run({{"x", input}});
    const bool taken = executor.stats().implementations[0].find(kF32) != std::string::npos;
    EXPECT_EQ(taken, value == nullptr && !quantize_detail::dnnl_int8_products_exact())
        << (value ? value : "unset") << ": " << executor.stats().implementations[0];
  }
}

TEST(Int8F32Route, PaddedPerChannelQLinearConvMatchesTheLoops) {
  Case c;
  c.attributes = "[pads=[1, 1, 1, 1]]";
  expect_route_matches_loops(c);
}

TEST(Int8F32Route, PerTensorScaleGroupedStridedBatchMatchesTheLoops) {
  Case c;
  c.attributes = "[group=2, strides=[2, 3], pads=[2, 0, 1, 2]]";
  c.group = 2;
  c.spatial = {13, 11};
  c.batch = 2;
  c.per_channel = false;
  c.x_zero = 200;
  expect_route_matches_loops(c);
}

TEST(Int8F32Route, DepthwiseMatchesTheLoops) {
  Case c;
  c.attributes = "[group=20, pads=[2, 2, 2, 2], dilations=[1, 2]]";
  c.channels_in = c.channels_out = c.group = 20;
  c.kernel = {5, 5};
  c.spatial = {11, 14};
  c.x_zero = 131;
  expect_route_matches_loops(c);
}

TEST(Int8F32Route, S8DataAndAWeightZeroPointMatchTheLoops) {
  Case c;
  c.attributes = "[pads=[0, 1, 2, 1]]";
  c.data = "i8";
  c.x_zero = -9;
  c.w_zero = 3;
  c.weight_high = 124;
  expect_route_matches_loops(c);
}

TEST(Int8F32Route, ConvIntegerOneAndThreeDimensionalMatchTheLoops) {
  Case one;
  one.op = "ConvInteger";
  one.attributes = "[pads=[2, 1], strides=[2]]";
  one.spatial = {31};
  one.kernel = {4};
  expect_route_matches_loops(one);
  Case three;
  three.attributes = "[pads=[1, 1, 1, 1, 1, 1]]";
  three.channels_in = 4;
  three.channels_out = 8;
  three.spatial = {5, 6, 7};
  three.kernel = {3, 3, 3};
  expect_route_matches_loops(three);
}

// 4,608 outputs on a team of two: the conversion and the requantization run in chunks.
TEST(Int8F32Route, TwoThreadsMatchTheLoops) {
  Case c;
  c.attributes = "[pads=[1, 1, 1, 1]]";
  c.channels_in = 12;
  c.channels_out = 32;
  c.spatial = {12, 12};
  c.threads = 2;
  expect_route_matches_loops(c);
}

// Two convolutions in a row: the first writes channels-last u8, which the second converts as it
// lies; against both nodes on the loops.
TEST(Int8F32Route, ChannelsLastChainMatchesTheLoops) {
  const ScopedRoute always("always");
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  auto random = [&](std::size_t count, bool weights) {
    std::vector<double> v(count);
    for (double& e : v) e = weights ? weight(rng) : byte(rng);
    return v;
  };
  const std::vector<double> w1 = random(24 * 6 * 9, true), w2 = random(40 * 24, true);
  auto text = [&](bool constant) {
    std::string t = "graph g [ai.onnx=13] (%x: u8[1,6,10,10]" +
                    std::string(constant ? "" : ", %w1: i8[24,6,3,3], %w2: i8[40,24,1,1]") +
                    ") {\n";
    if (constant)
      t += "  @w1: i8[24,6,3,3] = " + listed(w1) + "\n  @w2: i8[40,24,1,1] = " + listed(w2) + "\n";
    const std::string a = constant ? "@" : "%";
    t += "  @xs: f32[] = [0.05]\n  @xz: u8[] = [60]\n  @wz: i8[] = [0]\n"
         "  @ws: f32[] = [0.002]\n  @ys: f32[] = [0.6]\n  @yz: u8[] = [90]\n"
         "  %h = QLinearConv[pads=[1, 1, 1, 1]](%x, @xs, @xz, " +
         a + "w1, @ws, @wz, @ys, @yz)\n  %y = QLinearConv(%h, @ys, @yz, " + a +
         "w2, @ws, @wz, @xs, @xz)\n  return %y\n}\n";
    return t;
  };
  const Tensor input = make_tensor(DataType::kUInt8, {1, 6, 10, 10}, random(600, false));
  Executor route(parse_graph(text(true)));
  const Tensor fast = route.run({{"x", input}})[0];
  Executor loops(parse_graph(text(false)));
  const Tensor slow = loops.run({{"x", input},
                                 {"w1", make_tensor(DataType::kInt8, {24, 6, 3, 3}, w1)},
                                 {"w2", make_tensor(DataType::kInt8, {40, 24, 1, 1}, w2)}})[0];
  for (const std::string& implementation : route.stats().implementations) {
    EXPECT_NE(implementation.find(kF32), std::string::npos) << implementation;
  }
  const std::vector<double> a = fast.to_double_vector(), b = slow.to_double_vector();
  ASSERT_EQ(a.size(), b.size());
  int differing = 0, distinct = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    differing += a[i] != b[i];
    distinct += b[i] != b[0];
  }
  EXPECT_EQ(differing, 0) << "of " << a.size() << " elements";
  EXPECT_GT(distinct, 0);
}

// Matrix products take the route under "always" only: batched u8 data of a nonzero zero point
// times [K, N] weights of per-column scales and zero points, requantized (QLinearMatMul) and as
// int32 sums (MatMulInteger), against the loops.
TEST(Int8F32Route, MatrixProductsMatchTheLoops) {
  const ScopedRoute always("always");
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> byte(0, 255), weight(-120, 120);
  std::vector<double> x(2 * 7 * 40), w(40 * 24), scales, zeros;
  for (double& v : x) v = byte(rng);
  for (double& v : w) v = weight(rng);
  for (int n = 0; n < 24; ++n) {
    scales.push_back(0.001 * (n % 7 + 1));
    zeros.push_back(n % 5 - 2);
  }
  for (const std::string op : {"QLinearMatMul", "MatMulInteger"}) {
    SCOPED_TRACE(op);
    auto text = [&](bool constant) {
      std::string t = "graph g [ai.onnx=13] (%x: u8[2,7,40]" +
                      std::string(constant ? "" : ", %w: i8[40,24]") + ") {\n";
      if (constant) t += "  @w: i8[40,24] = " + listed(w) + "\n";
      const std::string b = constant ? "@w" : "%w";
      t += "  @xs: f32[] = [0.05]\n  @xz: u8[] = [77]\n  @wz: i8[24] = " +
           kernel_test::listed(zeros) + "\n  @ws: f32[24] = " + listed(scales) +
           "\n  @ys: f32[] = [0.4]\n  @yz: u8[] = [128]\n";
      t += op == "QLinearMatMul"
               ? "  %y = QLinearMatMul(%x, @xs, @xz, " + b + ", @ws, @wz, @ys, @yz)\n"
               : "  %y = MatMulInteger(%x, " + b + ", @xz, @wz)\n";
      return t + "  return %y\n}\n";
    };
    const Tensor input = make_tensor(DataType::kUInt8, {2, 7, 40}, x);
    Executor route(parse_graph(text(true)));
    const Tensor fast = route.run({{"x", input}})[0];
    Executor loops(parse_graph(text(false)));
    const Tensor slow =
        loops.run({{"x", input}, {"w", make_tensor(DataType::kInt8, {40, 24}, w)}})[0];
    EXPECT_NE(route.stats().implementations[0].find(kF32), std::string::npos)
        << route.stats().implementations[0];
    const std::vector<double> a = fast.to_double_vector(), b = slow.to_double_vector();
    ASSERT_EQ(a.size(), b.size());
    int differing = 0, distinct = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      differing += a[i] != b[i];
      distinct += b[i] != b[0];
    }
    EXPECT_EQ(differing, 0) << "of " << a.size() << " elements";
    EXPECT_GT(distinct, 0);
  }
}

}  // namespace
}  // namespace cleave
