// MatMul epilogue fusion: bias Add, Relu and PyTorch's GELU move into the MatMul; near misses stay.
#include "passes/matmul_epilogue_fusion.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string fuse(const std::string& text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fuse_matmul_epilogues(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// A Linear layer followed by GELU, as PyTorch exports it; `tail` replaces the activation.
std::string linear(const std::string& tail) {
  return R"(graph main [ai.onnx=13] (%x: f32[1,5,2]) {
  @w: f32[2,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  @b: f32[3] = [0.1, 0.2, 0.3]
  @root2: f32[] = [1.4142135]
  @one: f32[] = [1.0]
  @half: f32[] = [0.5]
  %p = MatMul(%x, @w)
  %l = Add(@b, %p)
)" + tail +
         R"(}
)";
}

const char* kGelu = R"(  %q = Div(%l, @root2)
  %f = Erf(%q)
  %g = Add(%f, @one)
  %t = Mul(%l, %g)
  %y = Mul(%t, @half)
  return %y
)";

TEST(MatmulEpilogueFusion, FusesBiasAndGelu) {
  PassResult result;
  EXPECT_EQ(fuse(linear(kGelu), &result), R"(graph main [ai.onnx=13] (%x: f32[1,5,2]) {
  @w: f32[2,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  @b: f32[3] = [0.1, 0.2, 0.3]
  @root2: f32[] = [1.4142135]
  @one: f32[] = [1.0]
  @half: f32[] = [0.5]
  %y = "p" MatMul[activation="Gelu"](%x, @w, @b)
  return %y
}
)");
  EXPECT_EQ(result.summary(),
            "MatMul epilogue fusion: 1 bias Adds fused into MatMul, 1 GELUs fused into MatMul");
}

TEST(MatmulEpilogueFusion, FusesGeluHalvedFirstAndScaledByMultiplication) {
  Graph graph = parse_graph(linear(R"(  @inverse: f32[] = [0.70710677]
  %q = Mul(@inverse, %l)
  %f = Erf(%q)
  %g = Add(@one, %f)
  %h = Mul(@half, %l)
  %y = Mul(%g, %h)
  return %y
)"));
  PassResult result = fuse_matmul_epilogues(graph);
  verify_graph(graph);
  EXPECT_EQ(result.count("GELUs fused into MatMul"), 1);
  EXPECT_EQ(graph.node_count(), 1u);
  EXPECT_EQ(graph.node(graph.value(graph.outputs()[0]).producer).string_attribute("activation", ""),
            "Gelu");
}

TEST(MatmulEpilogueFusion, FusesRelu) {
  PassResult result;
  EXPECT_EQ(fuse(linear("  %y = Relu(%l)\n  return %y\n"), &result),
            R"(graph main [ai.onnx=13] (%x: f32[1,5,2]) {
  @w: f32[2,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  @b: f32[3] = [0.1, 0.2, 0.3]
  @root2: f32[] = [1.4142135]
  @one: f32[] = [1.0]
  @half: f32[] = [0.5]
  %y = "p" MatMul[activation="Relu"](%x, @w, @b)
  return %y
}
)");
  EXPECT_EQ(
      result.summary(),
      "MatMul epilogue fusion: 1 bias Adds fused into MatMul, 1 Relu nodes fused into MatMul");
}

TEST(MatmulEpilogueFusion, LeavesABiasThatVariesPerRow) {
  const std::string text = R"(graph main [ai.onnx=13] (%x: f32[5,2]) {
  @w: f32[2,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  @b: f32[5,3] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
  %p = MatMul(%x, @w)
  %y = Add(%p, @b)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(MatmulEpilogueFusion, LeavesAMatMulWhoseWeightsAreNotConstant) {
  const std::string text = R"(graph main [ai.onnx=13] (%x: f32[5,2], %w: f32[2,3]) {
  @b: f32[3] = [0.1, 0.2, 0.3]
  %p = MatMul(%x, %w)
  %y = Add(%p, @b)
  return %y
}
)";
  EXPECT_EQ(fuse(text), text);
}

TEST(MatmulEpilogueFusion, LeavesGeluWhenTheMatMulOutputHasAThirdReader) {
  std::string tail = kGelu;
  tail.replace(tail.find("  return %y"), 11, "  %z = Neg(%l)\n  return %y, %z");
  Graph graph = parse_graph(linear(tail));
  PassResult result = fuse_matmul_epilogues(graph);
  EXPECT_EQ(result.count("bias Adds fused into MatMul"), 1);
  EXPECT_EQ(result.count("GELUs fused into MatMul"), 0);
  EXPECT_TRUE(graph.find_node("f").has_value());
}

TEST(MatmulEpilogueFusion, LeavesAnErfGateWithTheWrongConstant) {
  std::string text = linear(kGelu);
  text.replace(text.find("[0.5]"), 5, "[0.25]");
  Graph graph = parse_graph(text);
  EXPECT_EQ(fuse_matmul_epilogues(graph).count("GELUs fused into MatMul"), 0);
}

}  // namespace
}  // namespace cleave
