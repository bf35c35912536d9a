// The split's list schedule prices pieces by the cost table it is given (auto's spatial row).
#include <gtest/gtest.h>

#include "spatial/split_model.h"
#include "split_testing.h"

namespace cleave {
namespace {

using testing::graph_with_weights;

constexpr const char* kTwoConvs = R"(graph main [ai.onnx=17] (%x: f32[1,3,16,16]) {
  @w1: f32[8,3,3,3]
  @w2: f32[8,8,3,3]
  %c1: f32[1,8,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %c2: f32[1,8,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%c1, @w2)
  return %c2
})";

// One second per node, whatever its FLOPs: far from the FLOP model's microseconds.
CostTable one_second_per_node(const Graph& g) {
  CostTable t;
  t.source = "static";
  t.nodes.resize(g.node_capacity());
  for (NodeId id : g.node_ids()) t.nodes[id].seconds = {1.0};
  return t;
}

SplitModelOptions options(int machines, const CostTable* costs) {
  SplitModelOptions o;
  o.split.machines = machines;
  o.split.dim = SplitDim::kH;
  o.costs = costs;
  return o;
}

TEST(SplitCosts, OneMachinePredictsTheCostTablesSum) {
  Graph g = graph_with_weights(kTwoConvs);
  const CostTable costs = one_second_per_node(g);
  const SplitResult r = split_model(g, options(1, &costs));
  EXPECT_NEAR(r.report.whole_model_seconds, 2.0, 1e-9);
  EXPECT_NEAR(r.report.optimized.predicted_seconds, 2.0, 1e-3);
}

TEST(SplitCosts, TwoMachinesShareTheTablesSecondsNotFlops) {
  Graph g = graph_with_weights(kTwoConvs);
  const CostTable costs = one_second_per_node(g);
  const SplitResult r = split_model(g, options(2, &costs));
  // Half the rows each (plus a halo row): about one second per machine, never the FLOP
  // model's microseconds.
  EXPECT_GT(r.report.optimized.predicted_seconds, 0.9);
  EXPECT_LT(r.report.optimized.predicted_seconds, 1.5);
}

TEST(SplitCosts, WithoutATableFlopsAtTheRateStay) {
  Graph g = graph_with_weights(kTwoConvs);
  const SplitResult r = split_model(g, options(1, nullptr));
  EXPECT_LT(r.report.optimized.predicted_seconds, 1e-3);
}

}  // namespace
}  // namespace cleave
