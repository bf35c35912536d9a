// The partition search: its space (Eqs. 3.13-3.16) and pruning that never loses the optimum.
#include "spatial/search.h"

#include <gtest/gtest.h>

#include <random>

namespace cleave {
namespace {

TEST(Search, PossibleSizesFollowSpeedsAndThreshold) {
  SearchSpace s;
  s.length = 8;
  s.speeds = {1, 3, 1};
  s.threshold_percent = 20;
  auto sizes = possible_sizes(s);
  // interval sizes floor(8/5*1) = 1 and floor(8/5*3) = 4: [ceil(0.8), ceil(1.2)] = [1, 2] and
  // [ceil(3.2), ceil(4.8)] = [4, 5].
  EXPECT_EQ(sizes[0], (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(sizes[1], (std::vector<int64_t>{4, 5}));
}

TEST(Search, PrunedSearchFindsTheExhaustiveOptimumOnRandomCases) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    SearchSpace s;
    s.overlap = rng() % 2;
    s.length = 12 + static_cast<int64_t>(rng() % 24);
    const int machines = 2 + static_cast<int>(rng() % (s.overlap ? 2 : 3));
    for (int m = 0; m < machines; ++m) s.speeds.push_back(1 + rng() % 3);
    s.threshold_percent = 20 + rng() % 40;
    s.other_elements = 1 + rng() % 5;
    SearchWeights w;
    w.halo = rng() % 3;
    w.data = 0.1 * (rng() % 10);
    w.harmonic = 0.1 * (rng() % 10);
    SearchResult full = search_partition(s, w, false);
    SearchResult pruned = search_partition(s, w, true);
    ASSERT_EQ(full.best.empty(), pruned.best.empty()) << trial;
    if (full.best.empty()) continue;
    EXPECT_DOUBLE_EQ(pruned.value, full.value) << "trial " << trial;
    EXPECT_DOUBLE_EQ(partition_objective(s, w, pruned.best), full.value);
    EXPECT_LE(pruned.evaluated, full.evaluated + 1);  // + the speed-share split tried first
  }
}

// Five and six machines: deep trees where many prefixes reach the same (machine, start index),
// the subtrees Algorithms 3-5 share; the shared suffix bounds must not lose the optimum.
TEST(Search, SharedSubtreeBoundsKeepTheOptimumOnDeepTrees) {
  std::mt19937 rng(29);
  int64_t pruned_total = 0, full_total = 0;
  for (int trial = 0; trial < 40; ++trial) {
    SearchSpace s;
    s.overlap = rng() % 2;
    const int machines = 5 + static_cast<int>(rng() % 2);
    for (int m = 0; m < machines; ++m) s.speeds.push_back(1 + rng() % 2);
    s.length = 3 * machines + static_cast<int64_t>(rng() % (2 * machines));
    s.threshold_percent = 30 + rng() % 30;
    s.other_elements = 1 + rng() % 4;
    SearchWeights w;
    w.halo = rng() % 3;
    w.data = 0.1 * (rng() % 10);
    w.overlap = 0.1 * (rng() % 20);
    w.harmonic = 0.1 * (rng() % 10);
    SearchResult full = search_partition(s, w, false);
    SearchResult pruned = search_partition(s, w, true);
    ASSERT_EQ(full.best.empty(), pruned.best.empty()) << trial;
    if (full.best.empty()) continue;
    EXPECT_DOUBLE_EQ(pruned.value, full.value) << "trial " << trial;
    EXPECT_DOUBLE_EQ(partition_objective(s, w, pruned.best), full.value);
    pruned_total += pruned.evaluated;
    full_total += full.evaluated;
  }
  EXPECT_GT(full_total, 0);
  EXPECT_LT(pruned_total * 4, full_total);  // the bounds cut most of the leaves
}

// The Table 4.1 case at 16 machines (1x3x448x488, W, 20%: 10^27.8 partitions) finishes with few
// complete partitions evaluated; before the shared suffix bounds and the walked-prefix memo, 8
// machines did not finish in 420 s.
TEST(Search, SixteenMachinesOnTheThesisOutputEvaluateFewPartitions) {
  SearchSpace s;
  s.length = 488;
  s.other_elements = 3 * 448;
  s.speeds.assign(16, 1.0);
  s.threshold_percent = 20;
  s.overlap = true;
  SearchWeights w;
  w.halo = 2;
  SearchResult r = search_partition(s, w, true);
  ASSERT_EQ(r.best.size(), 16u);
  EXPECT_EQ(r.best.front().begin, 0);
  EXPECT_EQ(r.best.back().end, 488);
  EXPECT_GT(r.log10_total, 27);
  EXPECT_LT(r.evaluated, 1000);
}

TEST(Search, PartitionsTileTheOutputWithoutOverlap) {
  SearchSpace s;
  s.length = 40;
  s.speeds = {1, 2, 1};
  s.threshold_percent = 15;
  SearchResult r = search_partition(s, SearchWeights{}, true);
  ASSERT_EQ(r.best.size(), 3u);
  EXPECT_EQ(r.best[0].begin, 0);
  EXPECT_EQ(r.best[0].end, r.best[1].begin);
  EXPECT_EQ(r.best[1].end, r.best[2].begin);
  EXPECT_EQ(r.best[2].end, 40);
  EXPECT_EQ(r.best[1].size(), 20);  // the balanced split 10 | 20 | 10 is the optimum
}

}  // namespace
}  // namespace cleave

#include "ir/text.h"
#include "spatial/split_model.h"

namespace cleave {
namespace {

TEST(Search, LayerSharesFollowTheMachinesSpeeds) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,2,40,8]) {
  @w: f32[4,2,3,3]
  %y: f32[1,4,40,8] = "conv" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
})");
  SplitModelOptions o;
  o.split.machines = 2;
  o.cost.speeds = {1, 3};
  auto layers = searched_layer_configs(g, o, {});
  ASSERT_EQ(layers.count("conv"), 1u);
  EXPECT_EQ(layers["conv"].shares, (std::vector<double>{10, 30}));
}

}  // namespace
}  // namespace cleave
