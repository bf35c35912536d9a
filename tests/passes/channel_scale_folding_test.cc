// Channel-scale folding: a per-channel Mul before a Conv moves onto the Conv's weights.
#include "passes/channel_scale_folding.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/dead_code.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

std::string fold(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fold_channel_scales(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// How many scales the pass folds in the graph of `text`.
int64_t folded(const std::string& text) {
  PassResult result;
  fold(text, &result);
  return result.count("channel scales folded into Conv weights");
}

// Weights of `count` elements in the text form.
std::string weights_text(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string((i % 7) - 3);
  return text;
}

TEST(ChannelScaleFolding, TheScaleMovesOntoTheWeights) {
  // The Mul keeps its node name ("m"), so profiles and plans still name it.
  PassResult result;
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[1,2,1,1]) {
  @w: f32[3,2,1,1] = [1, 2, 3, 4, 5, 6]
  %m = Mul(%x, %s)
  %y = Conv[kernel_shape=[1,1]](%m, @w)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[1,2,1,1]) {
  @w: f32[3,2,1,1] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %w_scaled: f32[3,2,1,1] = "m" Mul(@w, %s)
  %y = Conv[kernel_shape=[1,1]](%x, %w_scaled)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "channel-scale folding: 1 channel scales folded into Conv weights");
}

TEST(ChannelScaleFolding, ScaleFirstAndOfLowerRank) {
  EXPECT_EQ(folded(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[2,1,1]) {
  @w: f32[3,2,1,1] = [1, 2, 3, 4, 5, 6]
  %m = Mul(%s, %x)
  %y = Conv[kernel_shape=[1,1]](%m, @w)
  return %y
})"),
            1);
}

TEST(ChannelScaleFolding, KeepsTheMulWhenTheWeightsAreNotSmallerThanHalfTheData) {
  // 8 weights against 16 data elements: scaling the weights (and reordering them) is no cheaper.
  EXPECT_EQ(folded(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,4], %s: f32[1,2,1,1]) {
  @w: f32[4,2,1,1] = [1, 2, 3, 4, 5, 6, 7, 8]
  %m = Mul(%x, %s)
  %y = Conv[kernel_shape=[1,1]](%m, @w)
  return %y
})"),
            0);
}

TEST(ChannelScaleFolding, KeepsTheMulWhenSomethingElseReadsIt) {
  EXPECT_EQ(folded(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[1,2,1,1]) {
  @w: f32[3,2,1,1] = [1, 2, 3, 4, 5, 6]
  %m = Mul(%x, %s)
  %y = Conv[kernel_shape=[1,1]](%m, @w)
  %z = Relu(%m)
  return %y, %z
})"),
            0);
}

TEST(ChannelScaleFolding, KeepsGroupedConvsAndScalesAlongOtherAxes) {
  EXPECT_EQ(folded(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[1,2,1,1]) {
  @w: f32[2,1,1,1] = [1, 2]
  %m = Mul(%x, %s)
  %y = Conv[group=2, kernel_shape=[1,1]](%m, @w)
  return %y
})"),
            0);
  EXPECT_EQ(folded(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[1,1,1,4]) {
  @w: f32[3,2,1,1] = [1, 2, 3, 4, 5, 6]
  %m = Mul(%x, %s)
  %y = Conv[kernel_shape=[1,1]](%m, @w)
  return %y
})"),
            0);
}

TEST(ChannelScaleFolding, KeepsALegacyBroadcastMul) {
  // Opset 6's broadcast=1 places a [C] operand at `axis`, not by numpy's rule.
  EXPECT_EQ(folded(R"(graph main [ai.onnx=6] (%x: f32[1,2,4,4], %s: f32[1,2,1,1]) {
  @w: f32[3,2,1,1] = [1, 2, 3, 4, 5, 6]
  %m = Mul[broadcast=1](%x, %s)
  %y = Conv[kernel_shape=[1,1]](%m, @w)
  return %y
})"),
            0);
}

TEST(ChannelScaleFolding, KeepsAMulThatIsTheConvsWeights) {
  EXPECT_EQ(folded(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4], %s: f32[1,2,1,1]) {
  %m = Mul(%x, %s)
  %y = Conv[kernel_shape=[4,4]](%x, %m)
  return %y
})"),
            0);
}

TEST(ChannelScaleFolding, OutputsAreUnchangedUpToRounding) {
  // A padded, strided 3x3 Conv with a bias: zero padding scaled stays zero.
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[1,3,9,9], %s: f32[1,3,1,1]) {
  @w: f32[4,3,3,3] = [)" + weights_text(4 * 3 * 3 * 3) +
                           R"(]
  @b: f32[4] = [0.5, -1, 2, 0]
  %m = Mul(%x, %s)
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%m, @w, @b)
  return %y
})";
  Graph original = parse_graph(text);
  Graph folded = parse_graph(text);
  ASSERT_EQ(fold_channel_scales(folded).count("channel scales folded into Conv weights"), 1);
  eliminate_dead_code(folded);
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 3, 9, 9});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  Tensor s = Tensor::allocate(DataType::kFloat, {1, 3, 1, 1});
  for (int64_t i = 0; i < s.element_count(); ++i) s.data<float>()[i] = uniform(random);
  Tensor want = Executor(original).run({{"x", x}, {"s", s}}).at(0);
  Tensor got = Executor(folded).run({{"x", x}, {"s", s}}).at(0);
  ASSERT_EQ(want.shape(), got.shape());
  auto expected = want.values<float>();
  auto actual = got.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-5) << i;
}

}  // namespace
}  // namespace cleave
