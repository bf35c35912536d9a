// QLinearAdd, QLinearConcat and u8 MaxPool between int8 convolutions: each block computes the
// same bytes whether the convolutions hand on their channels-last outputs (read as they lie) or
// the executor keeps every tensor plain, also where one operand comes plain (an output zero
// point not 0 makes its convolution requantize plain int32 sums).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

using kernel_test::listed;
using kernel_test::make_tensor;
using kernel_test::random_values;

// x → QLinearConv → h; h → QLinearConv → g (zero point `g_zero`); `join` of h and g → s;
// s → QLinearConv → y: the join reads two convolutions' outputs and feeds a third.
const char* kAdd = "  %s = com.microsoft.QLinearAdd(%h, @hs, @hz, %g, @gs, @gz, @ss, @sz)\n";
const char* kConcat =
    "  %c = com.microsoft.QLinearConcat[axis=1](@ss, @sz, %h, @hs, @hz, %g, @gs, @gz)\n"
    "  %s = MaxPool[kernel_shape=[3,3], strides=[2,2], ceil_mode=1](%c)\n";

std::string residual(const std::string& g_zero, const std::string& join = kAdd) {
  std::string text = "graph g [ai.onnx=13, com.microsoft=1] (%x: u8[1,16,9,9]) {\n";
  // The third convolution takes the join's 16 channels (Add) or 32 (Concat).
  const int joined = join == kAdd ? 16 : 32;
  for (int k = 1; k <= 3; ++k) {
    const int in = k == 3 ? joined : 16;
    text += "  @w" + std::to_string(k) + ": i8[16," + std::to_string(in) +
            ",3,3] = " + listed(random_values(16 * in * 9, -127, 127, k)) + "\n";
  }
  text += R"(  @xs: f32[] = [0.05]
  @xz: u8[] = [7]
  @ws: f32[] = [0.002]
  @wz: i8[] = [0]
  @hs: f32[] = [0.04]
  @hz: u8[] = [0]
  @gs: f32[] = [0.03]
  @gz: u8[] = [)" +
          g_zero +
          R"(]
  @ss: f32[] = [0.05]
  @sz: u8[] = [0]
  %h = QLinearConv[pads=[1,1,1,1]](%x, @xs, @xz, @w1, @ws, @wz, @hs, @hz)
  %g = QLinearConv[pads=[1,1,1,1]](%h, @hs, @hz, @w2, @ws, @wz, @gs, @gz)
)";
  text += join;
  return text + R"(  %y = QLinearConv[pads=[1,1,1,1]](%s, @ss, @sz, @w3, @ws, @wz, @xs, @xz)
  return %y
}
)";
}

void expect_layouts_agree(const std::string& g_zero, const std::string& join = kAdd) {
  const std::map<std::string, Tensor> inputs = {
      {"x", make_tensor(DataType::kUInt8, {1, 16, 9, 9}, random_values(16 * 81, 0, 255, 4))}};
  ExecutorOptions plain;
  plain.blocked_layouts = false;
  const Tensor expected = kernel_test::run_graph(residual(g_zero, join), inputs, plain)[0];
  const Tensor got = kernel_test::run_graph(residual(g_zero, join), inputs)[0];
  ASSERT_EQ(got.dtype(), DataType::kUInt8);
  EXPECT_EQ(got.to_double_vector(), expected.to_double_vector());
}

TEST(Int8AddLayouts, ChannelsLastOperandsMatchPlainLayouts) {
  expect_layouts_agree("0");
}

TEST(Int8AddLayouts, APlainOperandBesideAChannelsLastOneMatchesPlainLayouts) {
  expect_layouts_agree("9");
}

TEST(Int8ConcatLayouts, ChannelsLastPartsConcatenatedAndPooledMatchPlainLayouts) {
  expect_layouts_agree("0", kConcat);
}

TEST(Int8ConcatLayouts, APlainPartBesideAChannelsLastOneMatchesPlainLayouts) {
  expect_layouts_agree("9", kConcat);
}

}  // namespace
}  // namespace cleave
