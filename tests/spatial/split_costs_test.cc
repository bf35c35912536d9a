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

// A copy reads and writes its output's bytes: at 1 GB/s plus 1 ms per copy, far from the
// quarter FLOP per element that priced it before.
TEST(SplitCosts, ACopyCostsItsBytesAtTheCopyBandwidth) {
  Graph g = graph_with_weights(kTwoConvs);
  const CostTable costs = one_second_per_node(g);
  SplitModelOptions o = options(2, &costs);
  o.cost.copy_bytes_per_second = 1e9;
  o.cost.seconds_per_copy = 1e-3;
  const SplitResult r = split_model(g, o);
  const CostTable table = split_cost_table(g, r.partitioned, o.cost, &costs);
  int copies = 0;
  for (NodeId id : r.partitioned.graph.node_ids()) {
    if (r.partitioned.origin[id] >= 0) continue;
    ++copies;
    const ValueId out = r.partitioned.graph.node(id).outputs[0];
    const double bytes =
        2.0 * static_cast<double>(r.partitioned.graph.value(out).shape.element_count()) * 4;
    EXPECT_NEAR(table.seconds(id), 1e-3 + bytes / 1e9, 1e-12) << r.partitioned.graph.describe(id);
  }
  EXPECT_GT(copies, 0);
}

TEST(SplitCosts, PricedCopiesLengthenThePrediction) {
  Graph g = graph_with_weights(kTwoConvs);
  const CostTable costs = one_second_per_node(g);
  SplitModelOptions o = options(2, &costs);
  const double unpriced = split_model(g, o).report.optimized.predicted_seconds;
  o.cost.copy_bytes_per_second = 1e3;  // a kilobyte a second: the copies dominate
  const double priced = split_model(g, o).report.optimized.predicted_seconds;
  EXPECT_GT(priced, unpriced + 1.0);
}

}  // namespace
}  // namespace cleave
