// Conv+BatchNormalization fusion: the folded weights and bias, and when fusion must not happen.
#include "passes/conv_batchnorm_fusion.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string fuse(const char* text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fuse_conv_batchnorm(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// epsilon 0 and square variances keep every folded number exact:
// s = scale / sqrt(var) = [0.5, 1], W' = W·s = [1, 3], b' = (b - mean)·s + B = [0.5, -3].
TEST(ConvBatchNormFusion, FoldsScaleAndShiftIntoWeightsAndBias) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[2,1,1,1] = [2.0, 3.0]
  @b: f32[2] = [1.0, -1.0]
  @scale: f32[2] = [1.0, 3.0]
  @shift: f32[2] = [0.5, 0.0]
  @mean: f32[2] = [1.0, 2.0]
  @var: f32[2] = [4.0, 9.0]
  %c = Conv(%x, @w, @b)
  %y = BatchNormalization[epsilon=0.0](%c, @scale, @shift, @mean, @var)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[2,1,1,1] = [1.0, 3.0]
  @b: f32[2] = [0.5, -3.0]
  @scale: f32[2] = [1.0, 3.0]
  @shift: f32[2] = [0.5, 0.0]
  @mean: f32[2] = [1.0, 2.0]
  @var: f32[2] = [4.0, 9.0]
  %y = "c" Conv(%x, @w, @b)
  return %y
}
)");
  EXPECT_EQ(result.summary(),
            "Conv+BatchNormalization fusion: 1 BatchNormalization nodes fused into Conv");
}

TEST(ConvBatchNormFusion, GivesABiaslessConvABias) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[2,1,1,1] = [2.0, 3.0]
  @scale: f32[2] = [1.0, 3.0]
  @shift: f32[2] = [0.5, 0.0]
  @mean: f32[2] = [1.0, 2.0]
  @var: f32[2] = [4.0, 9.0]
  %c = Conv(%x, @w)
  %y = BatchNormalization[epsilon=0.0](%c, @scale, @shift, @mean, @var)
  return %y
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[2,1,1,1] = [1.0, 3.0]
  @scale: f32[2] = [1.0, 3.0]
  @shift: f32[2] = [0.5, 0.0]
  @mean: f32[2] = [1.0, 2.0]
  @var: f32[2] = [4.0, 9.0]
  @w_fused_bias: f32[2] = [0.0, -2.0]
  %y = "c" Conv(%x, @w, @w_fused_bias)
  return %y
}
)");
}

TEST(ConvBatchNormFusion, CopiesWeightsThatAnotherConvAlsoReads) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[2,1,1,1] = [2.0, 3.0]
  @scale: f32[2] = [1.0, 3.0]
  @shift: f32[2] = [0.0, 0.0]
  @mean: f32[2] = [0.0, 0.0]
  @var: f32[2] = [4.0, 9.0]
  %c = Conv(%x, @w)
  %y = BatchNormalization[epsilon=0.0](%c, @scale, @shift, @mean, @var)
  %other = Conv(%x, @w)
  return %y, %other
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[2,1,1,1] = [2.0, 3.0]
  @scale: f32[2] = [1.0, 3.0]
  @shift: f32[2] = [0.0, 0.0]
  @mean: f32[2] = [0.0, 0.0]
  @var: f32[2] = [4.0, 9.0]
  @w_fused: f32[2,1,1,1] = [1.0, 3.0]
  @w_fused_bias: f32[2] = [0.0, 0.0]
  %y = "c" Conv(%x, @w_fused, @w_fused_bias)
  %other = Conv(%x, @w)
  return %y, %other
}
)");
}

TEST(ConvBatchNormFusion, UsesTheDefaultEpsilon) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @scale: f32[1] = [1.5]
  @shift: f32[1] = [0.25]
  @mean: f32[1] = [0.5]
  @var: f32[1] = [0.01]
  %c = Conv(%x, @w)
  %y = BatchNormalization(%c, @scale, @shift, @mean, @var)
  return %y
})");
  fuse_conv_batchnorm(graph);
  const Node& conv = graph.node(*graph.find_node("c"));
  double factor = 1.5 / std::sqrt(0.01 + 1e-5);
  EXPECT_NEAR(graph.value(conv.inputs[1]).initializer->as<float>()[0], 2.0 * factor, 1e-5);
  EXPECT_NEAR(graph.value(conv.inputs[2]).initializer->as<float>()[0], -0.5 * factor + 0.25, 1e-5);
}

TEST(ConvBatchNormFusion, LeavesAConvWhoseOutputHasAnotherReader) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @p: f32[1] = [1.0]
  %c = Conv(%x, @w)
  %y = BatchNormalization(%c, @p, @p, @p, @p)
  %z = Relu(%c)
  return %y, %z
}
)";
  PassResult result;
  EXPECT_EQ(fuse(text, &result), text);
  EXPECT_FALSE(result.changed());
}

TEST(ConvBatchNormFusion, LeavesABatchNormWithParametersThatAreNotConstant) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %scale: f32[1]) {
  @w: f32[1,1,1,1] = [2.0]
  @p: f32[1] = [1.0]
  %c = Conv(%x, @w)
  %y = BatchNormalization(%c, %scale, @p, @p, @p)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(ConvBatchNormFusion, LeavesABatchNormInTrainingMode) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @p: f32[1] = [1.0]
  %c = Conv(%x, @w)
  %y = BatchNormalization[training_mode=1](%c, @p, @p, @p, @p)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

}  // namespace
}  // namespace cleave
