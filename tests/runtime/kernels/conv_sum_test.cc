// A Conv's fused residual sum: the residual, copied where the convolution adds to it (in
// parallel when it already has the output's layout), gives the unfused graph's output.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace cleave::kernel_test {
namespace {

std::vector<double> values(int64_t count, int seed) {
  std::vector<double> result(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) result[i] = ((i * 37 + seed * 11) % 23) / 23.0 - 0.5;
  return result;
}

// Two 1x1 convolutions make the operands in the layout convolutions write (as in a ResNet
// block, where the residual comes blocked from a convolution too), then a 3x3 convolution adds
// the residual before its ReLU: fused (`sum_input`) or as the Add and Relu nodes it replaces.
std::string block(int64_t channels, int64_t size, bool fused) {
  const int64_t c = channels;
  const std::string head = fmt::format(
      "graph main [ai.onnx=17] (%x: f32[1,{0},{1},{1}]) {{\n"
      "  @w1: f32[{0},{0},1,1] = [{2}]\n"
      "  @w2: f32[{0},{0},1,1] = [{3}]\n"
      "  @w3: f32[{0},{0},3,3] = [{4}]\n"
      "  @b3: f32[{0}] = [{5}]\n"
      "  %a = Conv[kernel_shape=[1,1]](%x, @w1)\n"
      "  %r = Conv[kernel_shape=[1,1]](%x, @w2)\n",
      c, size, fmt::join(values(c * c, 1), ","), fmt::join(values(c * c, 2), ","),
      fmt::join(values(c * c * 9, 3), ","), fmt::join(values(c, 4), ","));
  if (fused) {
    return head +
           "  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1], sum_input=3, activation=\"Relu\"]"
           "(%a, @w3, @b3, %r)\n  return %y\n}";
  }
  return head +
         "  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w3, @b3)\n"
         "  %s = Add(%c, %r)\n  %y = Relu(%s)\n  return %y\n}";
}

// 16 x 72 x 72 = 82,944 floats: above the size from which element-wise loops use the team.
TEST(ConvSum, ResidualInTheOutputsLayoutOnOneAndTwoThreads) {
  const int64_t channels = 16, size = 72;
  const Tensor x = floats({1, channels, size, size}, values(channels * size * size, 5));
  const std::vector<double> expected =
      run_graph(block(channels, size, false), {{"x", x}}).at(0).to_double_vector();
  for (int threads : {1, 2}) {
    ExecutorOptions options;
    options.threads = threads;
    const Tensor y = run_graph(block(channels, size, true), {{"x", x}}, options).at(0);
    SCOPED_TRACE(fmt::format("{} thread(s)", threads));
    expect_values(y, expected, 1e-5);
  }
}

}  // namespace
}  // namespace cleave::kernel_test
