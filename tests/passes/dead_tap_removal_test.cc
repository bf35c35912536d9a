// Dead-tap removal: a Conv's taps that read only padding are cut from its kernel.
#include "passes/dead_tap_removal.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/dead_code.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

std::string shrink(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = remove_dead_taps(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// Whether the pass changes the graph of `text` at all.
bool changes(const std::string& text) {
  PassResult result;
  shrink(text, &result);
  return result.changed();
}

// `count` small integer weights, -5 to 5, none of them all zero over a kernel.
std::string small_weights(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string((i * 7) % 11 - 5);
  return text;
}

TEST(DeadTapRemoval, DilationPastTheMapIsAOneByOneConv) {
  PassResult result;
  EXPECT_EQ(shrink(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[dilations=[6,6], kernel_shape=[3,3], pads=[6,6,6,6]](%x, @w)
  return %y
})",
                   &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,1,1] = [5.0]
  %y = Conv[dilations=[1,1], kernel_shape=[1,1], pads=[0,0,0,0]](%x, @w)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "dead-tap removal: 1 Conv kernels shrunk");
}

TEST(DeadTapRemoval, OnlyTheAxisWhoseOuterTapsAreDeadShrinks) {
  EXPECT_EQ(shrink(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,16]) {
  @w: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[dilations=[6,2], pads=[6,2,6,2]](%x, @w)
  return %y
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,4,16]) {
  @w: f32[1,1,1,3] = [4.0, 5.0, 6.0]
  %y = Conv[dilations=[1,2], pads=[0,2,0,2]](%x, @w)
  return %y
}
)");
}

TEST(DeadTapRemoval, KeepsTapsThatReachTheMapFromSomeOutput) {
  // Dilation 3 on 4 rows: the last output row's upper tap reads row 0.
  EXPECT_FALSE(changes(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[dilations=[3,3], pads=[3,3,3,3]](%x, @w)
  return %y
})"));
}

TEST(DeadTapRemoval, KeepsAnAxisWhoseLiveTapsStartInsideTheInput) {
  // Pads 4 with dilation 6 on 5 rows: only the middle tap is live, but it reads from row 2,
  // which a 1-tap kernel could only express with a negative pad.
  EXPECT_FALSE(changes(R"(graph main [ai.onnx=17] (%x: f32[1,1,5,5]) {
  @w: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[dilations=[6,6], pads=[4,4,4,4]](%x, @w)
  return %y
})"));
}

TEST(DeadTapRemoval, KeepsAutoPadAndRuntimeWeights) {
  EXPECT_FALSE(changes(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4], %w: f32[1,1,3,3]) {
  @k: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[auto_pad="SAME_UPPER", dilations=[6,6]](%x, @k)
  %z = Conv[dilations=[6,6], pads=[6,6,6,6]](%x, %w)
  return %y, %z
})"));
}

TEST(DeadTapRemoval, LeavesHostileSizesToTheKernel) {
  // A dilation near int64's limit would overflow the tap arithmetic.
  EXPECT_FALSE(changes(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[dilations=[4611686018427387904,1], pads=[6,0,6,0]](%x, @w)
  return %y
})"));
}

TEST(DeadTapRemoval, SharedWeightsStayForTheOtherReader) {
  EXPECT_EQ(shrink(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4], %big: f32[1,1,16,16]) {
  @w: f32[1,1,3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  %y = Conv[dilations=[6,6], pads=[6,6,6,6]](%x, @w)
  %z = Conv[dilations=[6,6], pads=[6,6,6,6]](%big, @w)
  return %y, %z
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4], %big: f32[1,1,16,16]) {
  @w: f32[1,1,3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  @w_live_taps: f32[1,1,1,1] = [5.0]
  %y = Conv[dilations=[1,1], pads=[0,0,0,0]](%x, @w_live_taps)
  %z = Conv[dilations=[6,6], pads=[6,6,6,6]](%big, @w)
  return %y, %z
}
)");
}

// A strided, grouped 3-D-weight case with a shrunk axis computes what the original did.
TEST(DeadTapRemoval, ShrunkConvolutionComputesTheSameOutput) {
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[1,4,5,9]) {
  @w: f32[6,2,3,5] = [)" + small_weights(6 * 2 * 3 * 5) +
                           R"(]
  %y = Conv[dilations=[7,2], group=2, pads=[7,3,8,4], strides=[2,2]](%x, @w)
  return %y
})";
  Graph original = parse_graph(text);
  Graph shrunk = parse_graph(text);
  ASSERT_EQ(remove_dead_taps(shrunk).count("Conv kernels shrunk"), 1);
  eliminate_dead_code(shrunk);
  verify_graph(shrunk);
  EXPECT_NE(print_graph(shrunk).find("f32[6,2,1,5]"), std::string::npos) << print_graph(shrunk);
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 4, 5, 9});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  std::vector<Tensor> expected = Executor(original).run({{"x", x}});
  std::vector<Tensor> actual = Executor(shrunk).run({{"x", x}});
  ASSERT_EQ(expected[0].shape(), actual[0].shape());
  auto want = expected[0].values<float>();
  auto got = actual[0].values<float>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

}  // namespace
}  // namespace cleave
