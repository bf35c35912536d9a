// Graph: stable ids, use lists, topological order, cycles and sub-graph boundaries.
#include "ir/graph.h"

#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"

namespace cleave {
namespace {

const char* kDiamond = R"(graph g (%x: f32[4]) {
  %a = Relu(%x)
  %b = Neg(%a)
  %c = Exp(%a)
  %d = Add(%b, %c)
  return %d
}
)";

TEST(Graph, PredecessorsAndSuccessorsFollowValues) {
  Graph g = parse_graph(kDiamond);
  EXPECT_EQ(g.successors(0), (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(g.predecessors(3), (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(g.consumers(*g.find_value("a")).size(), 2u);
}

TEST(Graph, TopologicalOrderIsStableById) {
  Graph g = parse_graph(kDiamond);
  EXPECT_EQ(g.topological_order(), (std::vector<NodeId>{0, 1, 2, 3}));
}

TEST(Graph, RemovedNodesKeepOtherIdsStable) {
  Graph g = parse_graph(kDiamond);
  g.replace_all_uses(*g.find_value("b"), *g.find_value("a"));
  g.remove_node(1);
  EXPECT_EQ(g.node_count(), 3u);
  EXPECT_EQ(g.node_ids(), (std::vector<NodeId>{0, 2, 3}));
  EXPECT_EQ(g.node(3).op_type, "Add");
  EXPECT_EQ(g.predecessors(3), (std::vector<NodeId>{0, 2}));
}

TEST(Graph, CycleIsReportedWithANodeOnIt) {
  Graph g;
  ValueId x = g.add_input("x", DataType::kFloat, Shape::of({1}));
  ValueId a = g.add_value("a");
  ValueId b = g.add_value("b");
  g.add_node("Add", {x, b}, {a}, {}, "first");
  g.add_node("Relu", {a}, {b}, {}, "second");
  try {
    g.topological_order();
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a cycle through node 'first' (Add)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Graph, SecondProducerOfAValueIsRefused) {
  Graph g = parse_graph(kDiamond);
  EXPECT_THROW(g.add_node("Relu", {*g.find_value("x")}, {*g.find_value("a")}), Error);
}

TEST(Graph, SubgraphViewFindsItsBoundary) {
  Graph g = parse_graph(R"(graph g (%x: f32[4]) {
  @w: f32[4] = [1.0, 2.0, 3.0, 4.0]
  %a = Mul(%x, @w)
  %b = Neg(%a)
  %c = Exp(%a)
  %d = Add(%b, %c)
  return %d
}
)");
  SubgraphView view(g, {1, 2});
  auto name = [&](ValueId v) { return g.value(v).name; };
  ASSERT_EQ(view.boundary_inputs().size(), 1u);
  EXPECT_EQ(name(view.boundary_inputs()[0]), "a");
  ASSERT_EQ(view.boundary_outputs().size(), 2u);
  EXPECT_EQ(name(view.boundary_outputs()[0]), "b");
  EXPECT_TRUE(view.initializers().empty());
  SubgraphView first(g, {0});
  ASSERT_EQ(first.initializers().size(), 1u);
  EXPECT_EQ(name(first.initializers()[0]), "w");
}

TEST(Shape, ElementCountOverflowIsAnError) {
  Shape huge = Shape::of({int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_THROW(huge.element_count(), Error);
  EXPECT_EQ(Shape::of({2, 3, 4}).element_count(), 24);
}

TEST(Verify, AcceptsAWellFormedGraph) {
  EXPECT_NO_THROW(verify_graph(parse_graph(kDiamond)));
}

TEST(Verify, DanglingInputNamesTheNode) {
  Graph g = parse_graph(kDiamond);
  ValueId ghost = g.add_value("ghost", DataType::kFloat);
  g.set_node_input(3, 1, ghost);
  try {
    verify_graph(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'd' (Add): input 'ghost' is not defined"),
              std::string::npos)
        << e.what();
  }
}

TEST(Verify, MismatchedElementTypesNameTheNode) {
  Graph g = parse_graph(R"(graph g (%x: f32[4], %y: i64[4]) {
  %z = Add(%x, %y)
  return %z
}
)");
  EXPECT_THROW(verify_graph(g), Error);
}

TEST(Verify, InitializerWithTooFewBytesIsRefused) {
  Graph g;
  TensorData t = TensorData::from(DataType::kFloat, {4}, std::vector<float>{1, 2});
  ValueId w = g.add_initializer("w", t);
  g.mark_output(w);
  EXPECT_THROW(verify_graph(g), Error);
}

}  // namespace
}  // namespace cleave
