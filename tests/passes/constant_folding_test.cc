// Constant folding: what folds (with the runtime's kernels), what stays, and the size cap.
#include "passes/constant_folding.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/dead_code.h"

namespace cleave {
namespace {

std::string fold(const char* text, PassResult* result = nullptr,
                 const ConstantFoldingOptions& options = {}) {
  Graph graph = parse_graph(text);
  PassResult r = fold_constants(graph, options);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

// Folding leaves the inputs of folded nodes unread; dead-code elimination clears them, and
// the tests that look at a chain read its end result that way.
std::string fold_and_clean(const char* text) {
  Graph graph = parse_graph(text);
  fold_constants(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  return print_graph(graph);
}

TEST(ConstantFolding, MakesConstantNodesInitializers) {
  PassResult result;
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %c = Constant[value=tensor<f32[2]>[1.0, 2.5]]()
  %k = Constant[value_ints=[3,4]]()
  %y = Add(%x, %c)
  return %y, %k
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @c: f32[2] = [1.0, 2.5]
  %k = Constant[value_ints=[3,4]]()
  %y = Add(%x, @c)
  return %y, %k
}
)");
  EXPECT_EQ(result.summary(), "constant folding: 1 Constant nodes made initializers");
}

TEST(ConstantFolding, EvaluatesANodeOfInitializersWithItsKernel) {
  PassResult result;
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @a: f32[2] = [1.0, 2.0]
  @b: f32[2] = [0.5, 0.25]
  %s = Add(@a, @b)
  %y = Mul(%x, %s)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @a: f32[2] = [1.0, 2.0]
  @b: f32[2] = [0.5, 0.25]
  @s: f32[2] = [1.5, 2.25]
  %y = Mul(%x, @s)
  return %y
}
)");
  EXPECT_EQ(result.count("nodes folded"), 1);
}

// QDQ fusion leaves each int8 weight's DequantizeLinear unread: folding it would hold a float
// copy of the weight (4x its bytes) until dead code ran.
TEST(ConstantFolding, LeavesANodeNoOutputDependsOnToDeadCode) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @w: i8[2] = [3, -4]
  @s: f32[] = [0.5]
  @z: i8[] = [0]
  %unread = DequantizeLinear(@w, @s, @z)
  %y = Relu(%x)
  return %y
})";
  PassResult result;
  EXPECT_EQ(fold(text, &result), print_graph(parse_graph(text)));
  EXPECT_EQ(result.count("nodes folded"), 0);
  EXPECT_EQ(result.count("dead nodes left unfolded"), 1);
}

TEST(ConstantFolding, FoldsTheShapeOfAValueWithAStaticShape) {
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[2,3,4]) {
  %r: f32[2,3,4] = Relu(%x)
  %s = Shape[start=1](%r)
  %n = Size(%r)
  return %s, %n, %r
})"),
            R"(graph main [ai.onnx=17] (%x: f32[2,3,4]) {
  %r: f32[2,3,4] = Relu(%x)
  %s = Shape[start=1](%r)
  %n = Size(%r)
  return %s, %n, %r: f32[2,3,4]
}
)") << "graph outputs stay produced by nodes";
  EXPECT_EQ(fold_and_clean(R"(graph main [ai.onnx=17] (%x: f32[2,3,4]) {
  %r: f32[2,3,4] = Relu(%x)
  %s = Shape[start=1](%r)
  %n = Size(%r)
  %y = Reshape(%r, %s)
  %z = Cast[to=1](%n)
  return %y, %z
})"),
            R"(graph main [ai.onnx=17] (%x: f32[2,3,4]) {
  @s: i64[2] = [3, 4]
  @n: i64[] = [24]
  %r: f32[2,3,4] = Relu(%x)
  %y = Reshape(%r, @s)
  %z = Cast[to=1](@n)
  return %y, %z
}
)");
}

TEST(ConstantFolding, LeavesTheShapeOfAValueWithSymbolicDims) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[N,3]) {
  %s = Shape(%x)
  %y = Reshape(%x, %s)
  return %y
}
)";
  PassResult result;
  EXPECT_EQ(fold(text, &result), text);
  EXPECT_FALSE(result.changed());
}

// What torch.onnx.export writes for x.view(x.size(0), -1).
TEST(ConstantFolding, FoldsAShapeGatherUnsqueezeConcatReshapeChain) {
  EXPECT_EQ(fold_and_clean(R"(graph main [ai.onnx=13] (%x: f32[2,3,4]) {
  @zero: i64[] = [0]
  @axes: i64[1] = [0]
  @minus_one: i64[1] = [-1]
  %s = Shape(%x)
  %g = Gather[axis=0](%s, @zero)
  %u = Unsqueeze(%g, @axes)
  %c = Concat[axis=0](%u, @minus_one)
  %y = Reshape(%x, %c)
  return %y
})"),
            R"(graph main [ai.onnx=13] (%x: f32[2,3,4]) {
  @c: i64[2] = [2, -1]
  %y = Reshape(%x, @c)
  return %y
}
)");
}

TEST(ConstantFolding, StopsAtANonConstantInput) {
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[1]) {
  @two: f32[1] = [2.0]
  @three: f32[1] = [3.0]
  %a = Add(%x, @two)
  %b = Mul(@two, @three)
  %c = Add(%a, %b)
  return %c
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1]) {
  @two: f32[1] = [2.0]
  @three: f32[1] = [3.0]
  @b: f32[1] = [6.0]
  %a = Add(%x, @two)
  %c = Add(%a, @b)
  return %c
}
)");
}

TEST(ConstantFolding, TreatsAnInitializerThatIsAlsoAGraphInputAsVariable) {
  // The input list prints an initializer without its data.
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[1], @w: f32[1] = [2.0]) {
  @one: f32[1] = [1.0]
  %a = Add(@w, @one)
  %y = Mul(%x, %a)
  return %y
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1], @w: f32[1]) {
  @one: f32[1] = [1.0]
  %a = Add(@w, @one)
  %y = Mul(%x, %a)
  return %y
}
)");
}

TEST(ConstantFolding, LeavesNodesOverTheSizeCap) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1]) {
  @shape: i64[2] = [1024, 1024]
  %big = ConstantOfShape(@shape)
  %y = Add(%x, %big)
  return %y
}
)";
  PassResult result;
  EXPECT_EQ(fold(text, &result, ConstantFoldingOptions{1 << 20}), text);
  EXPECT_EQ(result.count("nodes over size cap"), 1);
  EXPECT_EQ(result.count("nodes folded"), 0);
}

TEST(ConstantFolding, FoldsANodeJustUnderTheSizeCap) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1]) {
  @shape: i64[2] = [512, 512]
  %big = ConstantOfShape(@shape)
  %y = Add(%x, %big)
  return %y
})");
  PassResult result = fold_constants(graph, ConstantFoldingOptions{1 << 20});
  EXPECT_EQ(result.count("nodes folded"), 1);
  ASSERT_TRUE(graph.value(*graph.find_value("big")).initializer);
  EXPECT_EQ(graph.value(*graph.find_value("big")).initializer->dims,
            (std::vector<int64_t>{512, 512}));
}

TEST(ConstantFolding, LeavesOpsWithoutKernelAndRandomOps) {
  const char* text = R"(graph main [ai.onnx=17, com.example=1] (%x: f32[2]) {
  @a: f32[2] = [1.0, 2.0]
  %c = com.example.Mystery(@a)
  %r = RandomNormalLike(@a)
  %y = Add(%x, %c)
  %z = Add(%y, %r)
  return %z
}
)";
  PassResult result;
  EXPECT_EQ(fold(text, &result), text);
  EXPECT_EQ(result.count("nodes without kernel"), 1);
}

}  // namespace
}  // namespace cleave
