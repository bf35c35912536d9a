// The exact int8 convolutions without VNNI on a team of two: the pass that adds the two parts'
// sums and requantizes them runs in chunks on the team and computes the one-thread bits, and so
// do the clamped data's excess sums added in the same region, channels by thread.
#include <gtest/gtest.h>

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

std::string listed_floats(const std::vector<float>& values) {
  std::string text;
  for (float v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

// 96 -> 36 channels, 3x3, on 12x11 with per-channel weight scales and a bias: 2 * 31104 * 132 =
// 8.2 million integer ops, a team of two on 2 threads; 4,752 sums, so the chunks of the combining
// pass (multiples of 16) start inside a channel's run and inside a row. Data of zero point 128
// takes the weights' split.
// The one-thread output `a` and the team's `b`: the same bits, and not a constant.
void expect_same_bits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  const std::vector<double> va = a.to_double_vector(), vb = b.to_double_vector();
  int differing = 0, distinct = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    differing += va[i] != vb[i];
    distinct += va[i] != va[0];
  }
  EXPECT_EQ(differing, 0) << "of " << va.size() << " elements";
  EXPECT_GT(distinct, 0) << "a constant output would hide a misplaced chunk";
}

std::string conv_text(std::mt19937& rng) {
  std::uniform_int_distribution<int> weight(-127, 127), bias(-2000, 2000);
  std::vector<double> w(36 * 96 * 9), b(36);
  for (double& v : w) v = weight(rng);
  for (double& v : b) v = bias(rng);
  std::vector<float> scales(36);
  for (std::size_t c = 0; c < scales.size(); ++c) scales[c] = 0.002f + 0.0005f * float(c % 7);
  return "graph g [ai.onnx=13] (%x: u8[1,96,12,11]) {\n  @x_zero: u8[] = [128]\n"
         "  @x_scale: f32[] = [0.05]\n  @w_zero: i8[] = [0]\n  @y_scale: f32[] = [0.3]\n"
         "  @y_zero: u8[] = [120]\n  @w: i8[36,96,3,3] = " +
         listed(w) + "\n  @w_scale: f32[36] = " + listed_floats(scales) +
         "\n  @b: i32[36] = " + listed(b) +
         "\n  %y = QLinearConv[pads=[1, 1, 1, 1]](%x, @x_scale, @x_zero, @w, @w_scale, @w_zero, "
         "@y_scale, @y_zero, @b)\n  return %y\n}\n";
}

TEST(Int8TwoPartThreads, TheCombiningPassOnTwoThreadsComputesTheOneThreadBits) {
  if (quantize_detail::dnnl_int8_products_exact()) {
    GTEST_SKIP() << "runs where oneDNN's int8 products need the split (no VNNI: "
                    "ONEDNN_MAX_CPU_ISA=AVX2, as the capped CI run sets)";
  }
  std::mt19937 rng(11);
  const Graph graph = parse_graph(conv_text(rng));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<double> x(96 * 12 * 11);
  for (double& v : x) v = byte(rng);
  const Tensor input = make_tensor(DataType::kUInt8, {1, 96, 12, 11}, x);
  ExecutorOptions one, two;
  one.threads = 1;
  two.threads = 2;
  Executor single(graph, one), pair(graph, two);
  const Tensor a = single.run({{"x", input}})[0];
  const Tensor b = pair.run({{"x", input}})[0];
  EXPECT_NE(pair.stats().implementations[0].find("weights split in two"), std::string::npos)
      << pair.stats().implementations[0];
  expect_same_bits(a, b);
}

std::vector<double> random_weights(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> weight(-127, 127);
  std::vector<double> w(count);
  for (double& v : w) v = weight(rng);
  return w;
}

// One QLinearConv of u8 data of zero point 0 (the clamped-data path), `out` channels in `groups`
// groups, named %NAME from %FROM; y's zero point 0, so another such convolution can read it.
std::string clamped_conv(std::mt19937& rng, const std::string& name, const std::string& from,
                         int in, int out, int groups, const std::string& y_scale = "0.4") {
  std::uniform_int_distribution<int> bias(-3000, 3000);
  std::vector<double> b(static_cast<std::size_t>(out));
  for (double& v : b) v = bias(rng);
  std::vector<float> scales(static_cast<std::size_t>(out));
  for (std::size_t c = 0; c < scales.size(); ++c) scales[c] = 0.001f + 0.0003f * float(c % 5);
  const std::string w = "@" + name + "_w", at = "_" + name;
  return "  @x_zero" + at + ": u8[] = [0]\n  @x_scale" + at + ": f32[] = [0.05]\n  @w_zero" + at +
         ": i8[] = [0]\n  @y_scale" + at + ": f32[] = [" + y_scale + "]\n  @y_zero" + at +
         ": u8[] = [0]\n  " + w + ": i8[" + std::to_string(out) + "," +
         std::to_string(in / groups) +
         ",3,3] = " + listed(random_weights(rng, static_cast<std::size_t>(out * in / groups * 9))) +
         "\n  @w_scale" + at + ": f32[" + std::to_string(out) + "] = " + listed_floats(scales) +
         "\n  @b" + at + ": i32[" + std::to_string(out) + "] = " + listed(b) + "\n  %" + name +
         " = QLinearConv[pads=[1, 1, 1, 1], group=" + std::to_string(groups) + "](%" + from +
         ", @x_scale" + at + ", @x_zero" + at + ", " + w + ", @w_scale" + at + ", @w_zero" + at +
         ", @y_scale" + at + ", @y_zero" + at + ", @b" + at + ")\n";
}

// u8 data of which about `above` lie above 127 and the rest below, half of them 0 (a ReLU's).
Tensor relu_like(std::mt19937& rng, std::vector<int64_t> shape, double above) {
  std::uniform_real_distribution<double> share(0, 1);
  std::uniform_int_distribution<int> low(1, 127), high(128, 255);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<double> x(static_cast<std::size_t>(count));
  for (double& v : x) {
    const double s = share(rng);
    v = s < above ? high(rng) : s < 0.5 ? 0 : low(rng);
  }
  return make_tensor(DataType::kUInt8, std::move(shape), x);
}

// Runs `graph` on 1 and 2 threads for each input and expects the same bits, from outputs that
// are not constant, with every QLinearConv on the clamped-data path.
void expect_team_of_two_bits(const Graph& graph, const std::vector<Tensor>& inputs) {
  ExecutorOptions one, two;
  one.threads = 1;
  two.threads = 2;
  Executor single(graph, one), pair(graph, two);
  for (const Tensor& input : inputs) {
    // The team of two first: both runs' sums live in this thread's staging buffers, and a
    // share the team left out would otherwise still hold the one-thread run's values.
    const Tensor b = pair.run({{"x", input}})[0];
    const Tensor a = single.run({{"x", input}})[0];
    for (const std::string& implementation : pair.stats().implementations) {
      EXPECT_NE(implementation.find("data split at 127"), std::string::npos)
          << "[" << implementation << "] of " << pair.stats().implementations.size();
    }
    expect_same_bits(a, b);
  }
}

// 96 -> 36 channels, 3x3 on 24x22: 32.8 million integer ops, a team of two. The 36 channels are
// 5 units of 8 (the last short), shared 4 and 1; 19,008 plain sums whose chunks start inside a
// channel's run. About 3% of the data above 127 is scattered; 30% takes oneDNN's dense pass over
// the excess, whose whole sums the same region adds; none, the bias alone.
TEST(Int8TwoPartThreads, TheClampedDataPassesOnTwoThreadsComputeTheOneThreadBits) {
  if (quantize_detail::dnnl_int8_products_exact()) {
    GTEST_SKIP() << "runs where oneDNN's int8 products need the split (no VNNI: "
                    "ONEDNN_MAX_CPU_ISA=AVX2, as the capped CI run sets)";
  }
  std::mt19937 rng(5);
  const Graph graph = parse_graph("graph g [ai.onnx=13] (%x: u8[1,96,24,22]) {\n" +
                                  clamped_conv(rng, "y", "x", 96, 36, 1) + "  return %y\n}\n");
  expect_team_of_two_bits(
      graph, {relu_like(rng, {1, 96, 24, 22}, 0.03), relu_like(rng, {1, 96, 24, 22}, 0.3),
              relu_like(rng, {1, 96, 24, 22}, 0.0)});
}

// Data of 270 KiB (64 channels on 66x64, above the intra-op rule's bytes per thread): the
// clamped copy and the list of the values above 127 are made on the team of two too, the list
// scattered (3% above 127) or left for oneDNN's dense pass (30%). 16 channels: 2 units.
TEST(Int8TwoPartThreads, TheClampedScanOnTwoThreadsComputesTheOneThreadBits) {
  if (quantize_detail::dnnl_int8_products_exact()) {
    GTEST_SKIP() << "runs where oneDNN's int8 products need the split (no VNNI: "
                    "ONEDNN_MAX_CPU_ISA=AVX2, as the capped CI run sets)";
  }
  std::mt19937 rng(13);
  const Graph graph = parse_graph("graph g [ai.onnx=13] (%x: u8[1,64,66,64]) {\n" +
                                  clamped_conv(rng, "y", "x", 64, 16, 1) + "  return %y\n}\n");
  expect_team_of_two_bits(
      graph, {relu_like(rng, {1, 64, 66, 64}, 0.03), relu_like(rng, {1, 64, 66, 64}, 0.3)});
}

// Two such convolutions in a row: the first's sums stay channels-last (its consumer reads
// layouts), so its excess is added where the clamped pass's sums lie; the second reads that
// channels-last data and writes plain sums. 40 channels: 5 units, shared 4 and 1; 18.4 and 9.2
// million integer ops, each a team of two.
TEST(Int8TwoPartThreads, ChannelsLastSumsTakeTheExcessInPlaceOnTwoThreads) {
  if (quantize_detail::dnnl_int8_products_exact()) {
    GTEST_SKIP() << "runs where oneDNN's int8 products need the split (no VNNI: "
                    "ONEDNN_MAX_CPU_ISA=AVX2, as the capped CI run sets)";
  }
  std::mt19937 rng(9);
  const Graph graph = parse_graph("graph g [ai.onnx=13] (%x: u8[1,64,20,20]) {\n" +
                                  clamped_conv(rng, "h", "x", 64, 40, 1, "0.1") +
                                  clamped_conv(rng, "y", "h", 40, 32, 1) + "  return %y\n}\n");
  expect_team_of_two_bits(graph, {relu_like(rng, {1, 64, 20, 20}, 0.04)});
}

}  // namespace
}  // namespace cleave
