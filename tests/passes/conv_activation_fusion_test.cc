// Conv+Relu/Clip fusion: the activation becomes Conv attributes, bounds from either opset.
#include "passes/conv_activation_fusion.h"

#include <gtest/gtest.h>

#include <limits>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string fuse(const char* text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fuse_conv_activations(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

TEST(ConvActivationFusion, FusesRelu) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv[pads=[0,0,0,0]](%x, @w)
  %y = Relu(%c)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %y = "c" Conv[pads=[0,0,0,0], activation="Relu"](%x, @w)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Conv+activation fusion: 1 Relu nodes fused into Conv");
}

TEST(ConvActivationFusion, FusesReluIntoBatchNormalization) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @s: f32[1] = [1.0]
  @b: f32[1] = [0.0]
  @m: f32[1] = [0.0]
  @v: f32[1] = [1.0]
  %n = BatchNormalization(%x, @s, @b, @m, @v)
  %y = Relu(%n)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @s: f32[1] = [1.0]
  @b: f32[1] = [0.0]
  @m: f32[1] = [0.0]
  @v: f32[1] = [1.0]
  %y = "n" BatchNormalization[activation="Relu"](%x, @s, @b, @m, @v)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Conv+activation fusion: 1 Relu nodes fused into BatchNormalization");
}

TEST(ConvActivationFusion, KeepsReluWhenTheNormalizedValueHasAnotherReader) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @s: f32[1] = [1.0]
  @b: f32[1] = [0.0]
  @m: f32[1] = [0.0]
  @v: f32[1] = [1.0]
  %n = BatchNormalization(%x, @s, @b, @m, @v)
  %y = Relu(%n)
  %z = Add(%y, %n)
  return %z
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(ConvActivationFusion, FusesSigmoidTimesInputAsSwish) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %s = Sigmoid(%c)
  %y = Mul(%s, %c)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %y = "c" Conv[activation="Swish"](%x, @w)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Conv+activation fusion: 1 Sigmoid+Mul pairs fused into Conv");
}

TEST(ConvActivationFusion, FusesHardSigmoidTimesInputAsHardSwish) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %s = HardSigmoid[alpha=0.16666667, beta=0.5](%c)
  %y = Mul(%c, %s)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %y = "c" Conv[activation="HardSwish"](%x, @w)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Conv+activation fusion: 1 HardSigmoid+Mul pairs fused into Conv");
}

TEST(ConvActivationFusion, KeepsAHardSigmoidThatIsNotHardSwishs) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %s = HardSigmoid(%c)
  %y = Mul(%c, %s)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(ConvActivationFusion, KeepsSigmoidMulWhenTheConvOutputHasAnotherReader) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %s = Sigmoid(%c)
  %y = Mul(%c, %s)
  %z = Add(%c, %y)
  return %z
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(ConvActivationFusion, KeepsAGateThatIsNotTheSigmoidOfTheSameConv) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %g: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %s = Sigmoid(%g)
  %y = Mul(%c, %s)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(ConvActivationFusion, FusesClipWithBoundsGivenAsInputs) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @low: f32[] = [0.0]
  @high: f32[] = [6.0]
  %c = Conv(%x, @w)
  %y = Clip(%c, @low, @high)
  return %y
})"),
            R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @low: f32[] = [0.0]
  @high: f32[] = [6.0]
  %y = "c" Conv[activation="Clip", activation_min=0.0, activation_max=6.0](%x, @w)
  return %y
}
)");
}

TEST(ConvActivationFusion, FusesClipWithBoundsGivenAsAttributesBeforeOpset11) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=9] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %y = Clip[min=-1.0, max=1.0](%c)
  return %y
})"),
            R"(graph main [ai.onnx=9] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %y = "c" Conv[activation="Clip", activation_min=-1.0, activation_max=1.0](%x, @w)
  return %y
}
)");
}

TEST(ConvActivationFusion, TakesAnOmittedClipBoundAsUnbounded) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @low: f32[] = [0.0]
  %c = Conv(%x, @w)
  %y = Clip(%c, @low)
  return %y
})");
  fuse_conv_activations(graph);
  const Node& conv = graph.node(*graph.find_node("c"));
  EXPECT_EQ(conv.float_attribute("activation_min", -1), 0.0f);
  EXPECT_EQ(conv.float_attribute("activation_max", -1), std::numeric_limits<float>::max());
}

TEST(ConvActivationFusion, LeavesAClipWhoseBoundIsNotConstant) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[1,1,2,2], %high: f32[]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %y = Clip(%c, _, %high)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(ConvActivationFusion, LeavesAConvWhoseOutputHasAnotherReader) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %y = Relu(%c)
  return %y, %c
}
)";
  PassResult result;
  EXPECT_EQ(fuse(text, &result), text);
  EXPECT_FALSE(result.changed());
}

TEST(ConvActivationFusion, FusesOnlyOneActivationPerConv) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, @w)
  %r = Relu(%c)
  %y = Relu(%r)
  return %y
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %r = "c" Conv[activation="Relu"](%x, @w)
  %y = Relu(%r)
  return %y
}
)");
}

TEST(ConvActivationFusion, FusesAResidualAddAndTheReluAfterIt) {
  PassResult result;
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %r: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @b: f32[1] = [0.5]
  %c: f32[1,1,2,2] = Conv(%x, @w, @b)
  %s: f32[1,1,2,2] = Add(%r, %c)
  %y = Relu(%s)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %r: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  @b: f32[1] = [0.5]
  %y = "c" Conv[sum_input=3, activation="Relu"](%x, @w, @b, %r)
  return %y
}
)");
  EXPECT_EQ(result.summary(),
            "Conv+activation fusion: 1 Add nodes fused into Conv as a sum, 1 Relu nodes fused "
            "into Conv");
}

TEST(ConvActivationFusion, AResidualAddLeavesAnOmittedBiasOmitted) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %r: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c: f32[1,1,2,2] = Conv(%x, @w)
  %y: f32[1,1,2,2] = Add(%c, %r)
  return %y
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %r: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %y: f32[1,1,2,2] = "c" Conv[sum_input=3](%x, @w, _, %r)
  return %y: f32[1,1,2,2]
}
)");
}

TEST(ConvActivationFusion, KeepsABroadcastingAdd) {
  PassResult result;
  fuse(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2], %r: f32[1,2,1,1]) {
  @w: f32[2,2,1,1] = [1.0, 2.0, 3.0, 4.0]
  %c: f32[1,2,2,2] = Conv(%x, @w)
  %y = Add(%c, %r)
  return %y
})",
       &result);
  EXPECT_FALSE(result.changed());
}

TEST(ConvActivationFusion, KeepsAnAddAfterAnActivatedConvOrOneWhoseConvHasAnotherReader) {
  PassResult result;
  // relu(conv) + r is not relu(conv + r).
  fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %r: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c: f32[1,1,2,2] = Conv[activation="Relu"](%x, @w)
  %y = Add(%c, %r)
  return %y
})",
       &result);
  EXPECT_FALSE(result.changed());
  fuse(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2], %r: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %c: f32[1,1,2,2] = Conv(%x, @w)
  %y = Add(%c, %r)
  %z = Neg(%c)
  return %y, %z
})",
       &result);
  EXPECT_FALSE(result.changed());
}

}  // namespace
}  // namespace cleave
