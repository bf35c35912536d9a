// Ramiel static weights: totals, critical paths and parallelism checked by hand.
#include "analysis/static_cost.h"

#include <gtest/gtest.h>

#include "ir/text.h"

namespace cleave {
namespace {

std::vector<std::string> path_names(const Graph& graph, const StaticCostReport& report) {
  std::vector<std::string> names;
  for (NodeId id : report.critical_path) names.push_back(graph.node(id).name);
  return names;
}

TEST(StaticCost, ChainPaysForEveryEdge) {
  Graph graph = parse_graph(R"(graph chain (%x: f32[1,3,8,8]) {
  @w3: f32[4,3,3,3]
  @w1: f32[4,4,1,1]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w3)
  %b = Relu(%a)
  %c = Conv[kernel_shape=[1,1]](%b, @w1)
  return %c
})");
  StaticCostReport report = analyze_static_cost(graph);
  EXPECT_EQ(report.total_weight, 3 + 1 + 2);
  EXPECT_EQ(report.critical_path_length, 6 + 2);  // plus two edges
  EXPECT_EQ(path_names(graph, report), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_DOUBLE_EQ(report.parallelism, 0.75);
}

TEST(StaticCost, DiamondFollowsTheHeavierBranch) {
  Graph graph = parse_graph(R"(graph diamond (%x: f32[1,4,8,8]) {
  @w3: f32[4,4,3,3]
  @w1: f32[4,4,1,1]
  %a = Relu(%x)
  %b = Conv[kernel_shape=[1,1]](%a, @w1)
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w3)
  %d = Add(%b, %c)
  return %d
})");
  StaticCostReport report = analyze_static_cost(graph);
  EXPECT_EQ(report.total_weight, 1 + 2 + 3 + 1);
  EXPECT_EQ(report.critical_path_length, 1 + 3 + 1 + 2);
  EXPECT_EQ(path_names(graph, report), (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_DOUBLE_EQ(report.parallelism, 1.0);
}

TEST(StaticCost, ForkJoinWeighsKernelSizes) {
  Graph graph = parse_graph(R"(graph forkjoin (%x: f32[1,4,16,16]) {
  @w1: f32[2,4,1,1]
  @w3: f32[2,4,3,3]
  @w5: f32[2,4,5,5]
  @w7: f32[2,4,7,7]
  %s = Relu(%x)
  %b1 = Conv[kernel_shape=[1,1]](%s, @w1)
  %b3 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%s, @w3)
  %b5 = Conv[kernel_shape=[5,5], pads=[2,2,2,2]](%s, @w5)
  %b7 = Conv[kernel_shape=[7,7], pads=[3,3,3,3]](%s, @w7)
  %p = MaxPool[kernel_shape=[3,3], pads=[1,1,1,1]](%s)
  %j = Concat[axis=1](%b1, %b3, %b5, %b7, %p)
  return %j
})");
  StaticCostReport report = analyze_static_cost(graph);
  EXPECT_EQ(report.total_weight, 1 + 2 + 3 + 4 + 5 + 2 + 1);
  EXPECT_EQ(report.critical_path_length, 1 + 5 + 1 + 2);
  EXPECT_EQ(path_names(graph, report), (std::vector<std::string>{"s", "b7", "j"}));
  EXPECT_DOUBLE_EQ(report.parallelism, 2.0);
}

TEST(StaticCost, KernelSizeFallsBackToTheWeightShape) {
  Graph graph = parse_graph(R"(graph g (%x: f32[1,3,8,8]) {
  @w: f32[4,3,5,5]
  %y = Conv(%x, @w)
  return %y
})");
  EXPECT_EQ(static_node_weight(graph, 0), 4);
}

TEST(StaticCost, MatMulGemmAndPoolsAreHeavierThanElementwise) {
  Graph graph = parse_graph(R"(graph g (%x: f32[2,4], %y: f32[4,4]) {
  %m = MatMul(%x, %y)
  %g = Gemm(%m, %y)
  %s = Softmax(%g)
  %t = Tanh(%s)
  return %t
})");
  EXPECT_EQ(static_node_weight(graph, 0), 3);
  EXPECT_EQ(static_node_weight(graph, 1), 3);
  EXPECT_EQ(static_node_weight(graph, 2), 2);
  EXPECT_EQ(static_node_weight(graph, 3), 1);
}

TEST(StaticCost, EmptyGraphHasNoPath) {
  Graph graph = parse_graph("graph g (%x: f32[1]) {\n  return %x\n}");
  StaticCostReport report = analyze_static_cost(graph);
  EXPECT_EQ(report.total_weight, 0);
  EXPECT_TRUE(report.critical_path.empty());
  EXPECT_EQ(report.parallelism, 0);
}

}  // namespace
}  // namespace cleave
