// Outer values read by control-flow bodies, made explicit inputs for the runtime and left
// implicit again in the ONNX written out.
#include <gtest/gtest.h>

#include "ir/scope.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

namespace cleave {
namespace {

constexpr const char* kReadsOuter = R"(graph g [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %y = If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Identity(%x)
    return %p
  }](%c)
  return %y
})";

TEST(Captures, BecomeTrailingInputsNamedInTheAttribute) {
  Graph graph = parse_graph(kReadsOuter);
  EXPECT_EQ(make_captures_explicit(graph), 1);
  const Node& node = graph.node(0);
  ASSERT_EQ(node.inputs.size(), 2u);
  EXPECT_EQ(graph.value(node.inputs[1]).name, "x");
  EXPECT_EQ(captured_input_count(node), 1u);
  EXPECT_EQ(graph.consumers(node.inputs[1]).size(), 1u);
}

TEST(Captures, ASecondCallChangesNothing) {
  Graph graph = parse_graph(kReadsOuter);
  make_captures_explicit(graph);
  EXPECT_EQ(make_captures_explicit(graph), 0);
  EXPECT_EQ(graph.node(0).inputs.size(), 2u);
}

TEST(Captures, TheOnnxWrittenOutKeepsThemImplicit) {
  Graph graph = parse_graph(kReadsOuter);
  make_captures_explicit(graph);
  const onnx::ModelProto model = to_onnx(graph);
  ASSERT_EQ(model.graph().node_size(), 1);
  EXPECT_EQ(model.graph().node(0).input_size(), 1);
  for (const auto& attribute : model.graph().node(0).attribute())
    EXPECT_NE(attribute.name(), std::string(kCapturesAttribute));
  Graph back = import_onnx(model, "round trip");
  EXPECT_EQ(back.node(0).inputs.size(), 1u);
}

}  // namespace
}  // namespace cleave
