// The split's list schedule prices pieces by the cost table it is given (auto's spatial row).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <vector>

#include "spatial/region_rules.h"
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

double elements(const Graph& g, NodeId id) {
  const std::optional<std::vector<int64_t>> sizes = static_sizes(g, g.node(id).outputs[0]);
  double n = 1;
  for (int64_t d : sizes.value()) n *= static_cast<double>(d);
  return n;
}

// A profile of the partitioned graph runs machine 1's piece of a layer right after machine 0's:
// the weights are warm and the later piece reads cheaper than its rank runs it. Later pieces of
// a node with weights (c2's 2304 bytes) take the first piece's seconds per output element, never
// less than their own; a node whose weights are under 1 KiB (c1's 864 bytes), and copies, keep
// theirs.
TEST(SplitCostsTest, LaterPiecesOfALayerWithWeightsTakeTheFirstPiecesRate) {
  const Graph g = graph_with_weights(kTwoConvs);
  const SplitResult r = split_model(g, options(2, nullptr));
  const PartitionedGraph& p = r.partitioned;
  std::map<NodeId, std::vector<NodeId>> pieces;  // model node -> its pieces, in id order
  for (NodeId id : p.graph.node_ids())
    if (p.origin[id] >= 0) pieces[p.origin[id]].push_back(id);
  ASSERT_EQ(pieces.size(), 2u);
  const NodeId c1_first = pieces.begin()->second.at(0), c1_later = pieces.begin()->second.at(1);
  const NodeId c2_first = pieces.rbegin()->second.at(0), c2_later = pieces.rbegin()->second.at(1);
  CostTable table = one_second_per_node(p.graph);
  for (NodeId first : {c1_first, c2_first}) {
    table.nodes[first].seconds = {2e-3, 1.5e-3};
    table.nodes[first].busy_seconds = 3e-3;
  }
  for (NodeId later : {c1_later, c2_later}) {
    table.nodes[later].seconds = {5e-4, 4e-4};
    table.nodes[later].busy_seconds = 6e-4;
  }
  CostTable dearer = table;
  dearer.nodes[c2_later].seconds = {5e-3, 5e-3};
  price_pieces_as_their_ranks_run_them(p, table);
  const double scale = elements(p.graph, c2_later) / elements(p.graph, c2_first);
  EXPECT_GT(scale, 0.5);
  EXPECT_DOUBLE_EQ(table.nodes[c2_later].seconds[0], 2e-3 * scale);
  EXPECT_DOUBLE_EQ(table.nodes[c2_later].seconds[1], 1.5e-3 * scale);
  EXPECT_DOUBLE_EQ(*table.nodes[c2_later].busy_seconds, 3e-3 * scale);
  EXPECT_DOUBLE_EQ(table.nodes[c2_first].seconds[0], 2e-3);
  EXPECT_DOUBLE_EQ(table.nodes[c1_later].seconds[0], 5e-4);
  EXPECT_DOUBLE_EQ(*table.nodes[c1_later].busy_seconds, 6e-4);
  for (NodeId id : p.graph.node_ids()) {
    if (p.origin[id] >= 0) continue;
    EXPECT_EQ(table.nodes[id].seconds, std::vector<double>{1.0}) << id;
  }
  // Profiled dearer than the first piece's rate: kept.
  price_pieces_as_their_ranks_run_them(p, dearer);
  EXPECT_DOUBLE_EQ(dearer.nodes[c2_later].seconds[0], 5e-3);
  EXPECT_DOUBLE_EQ(dearer.nodes[c2_later].seconds[1], 5e-3);
}

}  // namespace
}  // namespace cleave
