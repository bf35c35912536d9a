// Sequence lowering: sequences known at load become the tensor operations they amount to.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "passes/sequence_lowering.h"

namespace cleave {
namespace {

// The op types of the live nodes, in topological order.
std::string ops(const Graph& graph) {
  std::string text;
  for (NodeId id : graph.topological_order()) text += graph.node(id).op_type + " ";
  return text;
}

TEST(SequenceLowering, AtAConstantPositionIsAnIdentityOfThatElement) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=12] (%x: f32[2], %y: f32[2], %z: f32[2]) {
  @p: i64[] = [-1]
  %s = SequenceConstruct(%x, %y, %z)
  %t = SequenceErase(%s, @p)
  %out = SequenceAt(%t, @p)
  return %out
})");
  PassResult result = lower_sequences(graph);
  EXPECT_EQ(result.count("sequence readers lowered"), 1);
  const Node& reader = graph.node(graph.value(graph.outputs()[0]).producer);
  EXPECT_EQ(reader.op_type, "Identity");
  EXPECT_EQ(graph.value(reader.inputs[0]).name, "y");
}

TEST(SequenceLowering, ConcatWithANewAxisUnsqueezesEachElement) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=12] (%x: f32[2], %y: f32[2]) {
  %s = SequenceConstruct(%x, %y)
  %out = ConcatFromSequence[axis=0, new_axis=1](%s)
  return %out
})");
  lower_sequences(graph);
  const Node& concat = graph.node(graph.value(graph.outputs()[0]).producer);
  EXPECT_EQ(concat.op_type, "Concat");
  ASSERT_EQ(concat.inputs.size(), 2u);
  EXPECT_EQ(graph.node(graph.value(concat.inputs[0]).producer).op_type, "Unsqueeze");
}

TEST(SequenceLowering, SplitWithoutSizesCountsTheAxis) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2,3]) {
  %s = SplitToSequence[axis=-1](%x)
  %n = SequenceLength(%s)
  return %n
})");
  lower_sequences(graph);
  const Node& length = graph.node(graph.value(graph.outputs()[0]).producer);
  EXPECT_EQ(length.op_type, "Constant");
  EXPECT_EQ(length.attribute("value")->t.as<int64_t>()[0], 3);
}

TEST(SequenceLowering, ASequenceOfUnknownContentsIsLeftAlone) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2], %p: i64[]) {
  %s = SequenceConstruct(%x, %x)
  %out = SequenceAt(%s, %p)
  return %out
})");
  EXPECT_EQ(lower_sequences(graph).count("sequence readers lowered"), 0);
  EXPECT_NE(ops(graph).find("SequenceAt"), std::string::npos);
}

}  // namespace
}  // namespace cleave
