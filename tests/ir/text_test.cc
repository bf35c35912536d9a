// Text form: printing and parsing round-trip, and parse errors point at line and column.
#include "ir/text.h"

#include <gtest/gtest.h>

namespace cleave {
namespace {

TEST(TextForm, RoundTripsAConvRelu) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,3,8,8]) {
  @w1: f32[4,3,3,3]
  @b: f32[4] = [1.0, 2.0, 3.0, 4.5]
  %y: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b)
  %z = Relu(%y)
  return %z
}
)";
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(TextForm, KeepsNodeNamesDomainsAndOmittedInputs) {
  const char* text = R"(graph g [ai.onnx=13, com.microsoft=1] (%x: f32[N,?,4]) {
  %a, %b = "split1" Split[axis=2](%x)
  %c = com.microsoft.Gelu(%a)
  %d = Clip(%c, _, _)
  return %d, %b
}
)";
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(TextForm, PrintsEveryScalarAndListAttributeKind) {
  const char* text = R"(graph g [ai.onnx=17] (%x: f32) {
  %y = Custom[f=0.5, i=-3, s="a \"quoted\" word", fs=[1.0,2.5], is=[1,2], ss=["p","q"], e=ints[], t=tensor<i64[2]>[7, 8]](%x)
  return %y
}
)";
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(TextForm, NestsControlFlowBodiesThatReadOuterValues) {
  const char* text = R"(graph g [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Identity(%x)
    return %p
  }](%c)
  return %y
}
)";
  Graph g = parse_graph(text);
  EXPECT_EQ(print_graph(g), text);
  const Attribute* body = g.node(0).attribute("then_branch");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->g->node_count(), 1u);
}

TEST(TextForm, LargeInitializersPrintWithoutData) {
  Graph g;
  ValueId x = g.add_input("x", DataType::kFloat, Shape::of({20}));
  ValueId w =
      g.add_initializer("w", TensorData::from(DataType::kFloat, {20}, std::vector<float>(20, 1.f)));
  NodeId add = g.add_op("Add", {x, w});
  g.mark_output(g.node(add).outputs[0]);
  EXPECT_NE(print_graph(g).find("  @w: f32[20]\n"), std::string::npos);
}

TEST(TextForm, UndefinedInputIsAnErrorWithPosition) {
  try {
    parse_graph("graph g (%x: f32[1]) {\n  %y = Relu(%nope)\n  return %y\n}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "graph text 2:13: %nope is used before it is defined");
  }
}

TEST(TextForm, WrongNumberOfInlineValuesIsAnError) {
  EXPECT_THROW(parse_graph("graph g () {\n  @w: f32[3] = [1.0, 2.0]\n  return @w\n}"), Error);
}

TEST(TextForm, DuplicateOutputIsAnError) {
  EXPECT_THROW(parse_graph("graph g (%x: f32[1]) {\n  %x = Relu(%x)\n  return %x\n}"), Error);
}

TEST(TextForm, UnknownElementTypeIsAnError) {
  EXPECT_THROW(parse_graph("graph g (%x: f33[1]) {\n  return %x\n}"), Error);
}

}  // namespace
}  // namespace cleave
