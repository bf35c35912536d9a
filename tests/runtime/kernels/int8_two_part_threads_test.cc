// The exact int8 convolutions without VNNI on a team of two: the pass that adds the two parts'
// sums and requantizes them runs in chunks on the team and computes the one-thread bits.
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

}  // namespace
}  // namespace cleave
