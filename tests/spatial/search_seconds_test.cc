// The seconds objective of the partition search: exact against enumeration, and its choices.
#include "spatial/search_seconds.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

#include "cost/cost_table.h"
#include "ir/text.h"
#include "spatial/split_model.h"

namespace cleave {
namespace {

// Every partition of the space (the same rules as search_partition's tree), by brute force.
double brute_force_seconds(const SearchSpace& space, const SecondsModel& model) {
  const auto sizes = possible_sizes(space);
  const int n = static_cast<int>(sizes.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<Interval> current(n);
  std::function<void(int, int64_t, int64_t)> walk = [&](int k, int64_t lo, int64_t hi) {
    for (int64_t s = lo; s <= hi; ++s)
      for (int64_t size : sizes[k]) {
        current[k] = {s, s + size};
        if (current[k].end > space.length) break;
        if (k == n - 1) {
          if (current[k].end == space.length)
            best = std::min(best, partition_seconds(space, model, current));
        } else {
          walk(k + 1, space.overlap ? s + 1 : current[k].end,
               std::min(current[k].end, space.length - 1));
        }
      }
  };
  walk(0, 0, 0);
  return best;
}

TEST(SearchSeconds, FindsTheEnumeratedOptimumOnRandomCases) {
  std::mt19937 rng(5);
  int compared = 0;
  for (int trial = 0; trial < 50; ++trial) {
    SearchSpace s;
    s.overlap = rng() % 2;
    const int machines = 2 + static_cast<int>(rng() % 4);
    for (int m = 0; m < machines; ++m) s.speeds.push_back(1 + rng() % 3);
    s.length = 3 * machines + static_cast<int64_t>(rng() % (3 * machines));
    s.threshold_percent = 30 + rng() % 40;
    SecondsModel model;
    for (double speed : s.speeds) model.seconds_per_index.push_back(1e-3 / speed);
    model.bytes_per_index = 1000.0 * (1 + rng() % 4);
    model.halo = rng() % 3;
    model.links.latency_seconds = 1e-4 * (rng() % 3);
    model.links.bandwidth.assign(machines, std::vector<double>(machines, 0));
    for (auto& row : model.links.bandwidth)
      for (double& bw : row) bw = 1e6 * (1 + rng() % 8);
    const double expected = brute_force_seconds(s, model);
    SearchResult r = search_partition_seconds(s, model);
    ASSERT_EQ(r.best.empty(), expected == std::numeric_limits<double>::infinity()) << trial;
    if (r.best.empty()) continue;
    ++compared;
    EXPECT_DOUBLE_EQ(r.value, expected) << "trial " << trial;
    EXPECT_DOUBLE_EQ(partition_seconds(s, model, r.best), expected) << "trial " << trial;
  }
  EXPECT_GT(compared, 25);
}

TEST(SearchSeconds, HaloOverASlowLinkCostsItsBytesOverTheBandwidth) {
  SearchSpace s;
  s.length = 10;
  s.speeds = {1, 1};
  SecondsModel model;
  model.seconds_per_index = {1, 1};
  model.bytes_per_index = 100;
  model.halo = 2;
  model.links.latency_seconds = 0;
  model.links.bytes_per_second = 50;  // 2 indices x 100 bytes / 50 = 4 s each way
  EXPECT_DOUBLE_EQ(partition_seconds(s, model, {{0, 5}, {5, 10}}), 5 + 4);
  s.overlap = true;  // computing the halo on both sides costs 2 s and saves the transfer
  EXPECT_DOUBLE_EQ(partition_seconds(s, model, {{0, 7}, {3, 10}}), 7);
}

// Three equal machines, the link between machines 0 and 1 slow: the terms objective counts
// elements and keeps the layer balanced; the seconds objective sees that machines 0 and 1 wait
// on that link for the halo of the layer before and gives machine 2 more rows.
TEST(SearchSeconds, ObjectivesPickDifferentSharesWhenOneLinkIsSlow) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,8,60,60]) {
  @w: f32[8,8,3,3]
  @w0: f32[8,8,3,3]
  %h: f32[1,8,60,60] = "first" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w0)
  %y: f32[1,8,60,60] = "conv" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%h, @w)
  return %y
})");
  SplitModelOptions o;
  o.split.machines = 3;
  o.split.dim = SplitDim::kH;
  o.cost.flops_per_second = 1e9;
  o.cost.bandwidth.assign(3, std::vector<double>(3, 1e9));
  o.cost.latency.assign(3, std::vector<double>(3, 1e-5));
  o.cost.bandwidth[0][1] = o.cost.bandwidth[1][0] = 2e6;  // 2 MB/s between 0 and 1
  o.fuse = false;  // halos are received, never computed again
  auto terms = searched_layer_configs(g, o, {}, 20, SearchObjective::kTerms);
  auto seconds = searched_layer_configs(g, o, {}, 20, SearchObjective::kSeconds);
  ASSERT_EQ(terms.count("conv"), 1u);
  ASSERT_EQ(seconds.count("conv"), 1u);
  EXPECT_EQ(terms["conv"].shares, (std::vector<double>{20, 20, 20}));
  const auto& picked = seconds["conv"].shares;
  ASSERT_EQ(picked.size(), 3u);
  EXPECT_GT(picked[2], 20);
  EXPECT_LT(picked[0] + picked[1], 40);
}

TEST(SearchSeconds, UsesTheCostTablesSecondsForTheLayer) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,8,60,60]) {
  @w: f32[8,8,3,3]
  @w0: f32[8,8,3,3]
  %h: f32[1,8,60,60] = "first" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w0)
  %y: f32[1,8,60,60] = "conv" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%h, @w)
  return %y
})");
  SplitModelOptions o;
  o.split.machines = 3;
  o.split.dim = SplitDim::kH;
  o.cost.bandwidth.assign(3, std::vector<double>(3, 1e9));
  o.cost.latency.assign(3, std::vector<double>(3, 0));
  o.cost.bandwidth[0][1] = o.cost.bandwidth[1][0] = 2e6;
  // A layer of one hour: compute dwarfs the slow link, so the split stays balanced.
  CostTable slow = static_costs(g);
  for (NodeCost& c : slow.nodes)
    if (!c.seconds.empty()) c.seconds.assign(c.seconds.size(), 3600.0);
  auto picked = searched_layer_configs(g, o, {}, 20, SearchObjective::kSeconds, &slow);
  EXPECT_EQ(picked["conv"].shares, (std::vector<double>{20, 20, 20}));
}

}  // namespace
}  // namespace cleave
