// Common-subexpression elimination: equal nodes merge, graph output names never change.
#include "passes/common_subexpression.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

std::string eliminate(const char* text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = eliminate_common_subexpressions(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

TEST(CommonSubexpression, MergesTwoEqualNodes) {
  PassResult result;
  EXPECT_EQ(eliminate(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %b = Relu(%x)
  %y = Add(%a, %b)
  return %y
})",
                      &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %y = Add(%a, %a)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "common-subexpression elimination: 1 nodes merged");
}

TEST(CommonSubexpression, MergesReadersOfMergedNodesInTurn) {
  PassResult result;
  EXPECT_EQ(eliminate(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %b = Relu(%x)
  %c = Neg(%a)
  %d = Neg(%b)
  %y = Add(%c, %d)
  return %y
})",
                      &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %c = Neg(%a)
  %y = Add(%c, %c)
  return %y
}
)");
  EXPECT_EQ(result.count("nodes merged"), 2);
}

TEST(CommonSubexpression, KeepsNodesWithDifferentAttributesApart) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %a = Softmax[axis=0](%x)
  %b = Softmax[axis=1](%x)
  %y = Add(%a, %b)
  return %y
}
)";
  EXPECT_EQ(eliminate(text), text);
}

TEST(CommonSubexpression, KeepsNodesReadingInputsInAnotherOrder) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2], %z: f32[2]) {
  %a = Sub(%x, %z)
  %b = Sub(%z, %x)
  %y = Add(%a, %b)
  return %y
}
)";
  EXPECT_EQ(eliminate(text), text);
}

TEST(CommonSubexpression, KeepsRandomNodesApart) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = RandomNormalLike(%x)
  %b = RandomNormalLike(%x)
  %y = Add(%a, %b)
  return %y
}
)";
  EXPECT_EQ(eliminate(text), text);
}

TEST(CommonSubexpression, KeepsTheNameOfAGraphOutputTheDuplicateWrites) {
  PassResult result;
  EXPECT_EQ(eliminate(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %c = Neg(%a)
  %b = Relu(%x)
  %d = Neg(%b)
  %y = Add(%c, %d)
  return %b, %y
})",
                      &result),
            R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %b = Relu(%x)
  %c = Neg(%b)
  %y = Add(%c, %c)
  return %b, %y
}
)");
  EXPECT_EQ(result.count("nodes merged"), 2);
}

TEST(CommonSubexpression, KeepsBothWhenEachWritesAGraphOutput) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = Relu(%x)
  %b = Relu(%x)
  return %a, %b
}
)";
  PassResult result;
  EXPECT_EQ(eliminate(text, &result), text);
  EXPECT_EQ(result.count("kept for graph output names"), 1);
}

}  // namespace
}  // namespace cleave
