// LayerNormalization fusion: the elementwise spelling becomes one node, and near misses stay.
#include "passes/layer_norm_fusion.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string fuse(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fuse_layer_norms(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// PyTorch's export of nn.LayerNorm(4) below opset 17, with `square` and `extra` for variants.
std::string spelled_out(const std::string& square = "Pow(%d, @two)",
                        const std::string& extra = "") {
  return R"(graph main [ai.onnx=13] (%x: f32[2,3,4]) {
  @two: f32[] = [2.0]
  @eps: f32[] = [1e-05]
  @gamma: f32[4] = [1.0, 2.0, 3.0, 4.0]
  @beta: f32[4] = [0.5, 0.5, 0.5, 0.5]
  %m = ReduceMean[axes=[-1]](%x)
  %d = Sub(%x, %m)
  %s = )" +
         square + R"(
  %v = ReduceMean[axes=[-1]](%s)
  %e = Add(%v, @eps)
  %r = Sqrt(%e)
  %n = Div(%d, %r)
  %g = Mul(%n, @gamma)
  %y = Add(@beta, %g)
)" + extra +
         R"(  return %y
}
)";
}

TEST(LayerNormFusion, FusesTheSpelledOutChainWithScaleAndBias) {
  PassResult result;
  EXPECT_EQ(fuse(spelled_out(), &result), R"(graph main [ai.onnx=13] (%x: f32[2,3,4]) {
  @two: f32[] = [2.0]
  @eps: f32[] = [1e-05]
  @gamma: f32[4] = [1.0, 2.0, 3.0, 4.0]
  @beta: f32[4] = [0.5, 0.5, 0.5, 0.5]
  %y = "m" LayerNormalization[axis=2, epsilon=1e-05](%x, @gamma, @beta)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "LayerNormalization fusion: 1 layer normalizations fused");
}

TEST(LayerNormFusion, AcceptsTheVarianceAsASelfProduct) {
  Graph graph = parse_graph(spelled_out("Mul(%d, %d)"));
  EXPECT_EQ(fuse_layer_norms(graph).count("layer normalizations fused"), 1);
}

TEST(LayerNormFusion, WithoutAMulTheScaleIsOnes) {
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%x: f32[2,3]) {
  @two: f32[] = [2.0]
  @eps: f32[] = [0.001]
  %m = ReduceMean[axes=[1]](%x)
  %d = Sub(%x, %m)
  %s = Pow(%d, @two)
  %v = ReduceMean[axes=[1]](%s)
  %e = Add(@eps, %v)
  %r = Sqrt(%e)
  %y = Div(%d, %r)
  return %y
})"),
            R"(graph main [ai.onnx=13] (%x: f32[2,3]) {
  @two: f32[] = [2.0]
  @eps: f32[] = [0.001]
  @m_scale: f32[3] = [1.0, 1.0, 1.0]
  %y = "m" LayerNormalization[axis=1, epsilon=0.001](%x, @m_scale)
  return %y
}
)");
}

TEST(LayerNormFusion, NormalizesSeveralTrailingAxesWithAxesAsAnInput) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=18] (%x: f32[2,3,4]) {
  @axes: i64[2] = [-1, -2]
  @two: f32[] = [2.0]
  @eps: f32[] = [1e-05]
  %m = ReduceMean(%x, @axes)
  %d = Sub(%x, %m)
  %s = Pow(%d, @two)
  %v = ReduceMean(%s, @axes)
  %e = Add(%v, @eps)
  %r = Sqrt(%e)
  %y = Div(%d, %r)
  return %y
})");
  ASSERT_EQ(fuse_layer_norms(graph).count("layer normalizations fused"), 1);
  const Node& norm = graph.node(*graph.find_node("m"));
  EXPECT_EQ(norm.op_type, "LayerNormalization");
  EXPECT_EQ(norm.int_attribute("axis", -1), 1);
}

TEST(LayerNormFusion, LeavesAReductionOverALeadingAxis) {
  std::string text = spelled_out();
  text.replace(text.find("axes=[-1]"), 9, "axes=[1]");
  EXPECT_EQ(fuse(text), print_graph(parse_graph(text)));
}

TEST(LayerNormFusion, LeavesTheChainWhenTheCenteredValueHasAnotherReader) {
  std::string text = spelled_out("Pow(%d, @two)", "  %z = Neg(%d)\n");
  text.replace(text.find("return %y"), 9, "return %y, %z");
  EXPECT_EQ(fuse(text), print_graph(parse_graph(text)));
}

TEST(LayerNormFusion, LeavesAPowerOtherThanTwo) {
  std::string text = spelled_out();
  text.replace(text.find("[2.0]"), 5, "[3.0]");
  EXPECT_EQ(fuse(text), print_graph(parse_graph(text)));
}

TEST(LayerNormFusion, StopsBeforeAScaleThatVariesOverOtherAxes) {
  std::string text = spelled_out();
  text.replace(text.find("@gamma: f32[4]"), 14, "@gamma: f32[3,4]");
  text.replace(text.find("[1.0, 2.0, 3.0, 4.0]"), 20,
               "[1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]");
  Graph graph = parse_graph(text);
  ASSERT_EQ(fuse_layer_norms(graph).count("layer normalizations fused"), 1);
  verify_graph(graph);
  // A [3,4] scale is not LayerNormalization's [4]: the Mul and Add stay after the fused node.
  EXPECT_EQ(graph.node(*graph.find_node("m")).inputs.size(), 2u);
  EXPECT_TRUE(graph.find_node("g").has_value());
  EXPECT_TRUE(graph.find_node("y").has_value());
}

TEST(LayerNormFusion, LeavesAGraphOutputInsideTheChain) {
  std::string text = spelled_out();
  text.replace(text.find("return %y"), 9, "return %y, %v");
  EXPECT_EQ(fuse(text), print_graph(parse_graph(text)));
}

}  // namespace
}  // namespace cleave
