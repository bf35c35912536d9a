// The seconds objective over chains of layers: exact against brute force, and aligned shares.
#include "spatial/search_chain.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "ir/text.h"
#include "spatial/split_model.h"

namespace cleave {
namespace {

// Every combination of one candidate per layer.
double brute_force_chain(const std::vector<ChainLayer>& chain, const SplitCostModel& links) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::vector<Interval>> choice(chain.size());
  std::function<void(std::size_t)> walk = [&](std::size_t k) {
    if (k == chain.size()) {
      best = std::min(best, chain_seconds(chain, links, choice));
      return;
    }
    for (const auto& c : chain[k].candidates) {
      choice[k] = c;
      walk(k + 1);
    }
  };
  walk(0);
  return best;
}

TEST(SearchChain, FindsTheBruteForceOptimumOnRandomChains) {
  std::mt19937 rng(17);
  int compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int machines = 2 + static_cast<int>(rng() % 2);
    const int layers = 2 + static_cast<int>(rng() % 3);
    SplitCostModel links;
    links.bandwidth.assign(machines, std::vector<double>(machines, 0));
    links.latency.assign(machines, std::vector<double>(machines, 1e-4 * (rng() % 3)));
    for (auto& row : links.bandwidth)
      for (double& bw : row) bw = 1e6 * (1 + rng() % 8);
    std::vector<double> speeds;
    for (int m = 0; m < machines; ++m) speeds.push_back(1 + rng() % 3);
    std::vector<ChainLayer> chain;
    int64_t previous_length = 0;
    std::size_t combinations = 1;
    for (int k = 0; k < layers; ++k) {
      SearchSpace s;
      s.speeds = speeds;
      // Stride 1 or 2 between layers: this layer has the previous length or half of it.
      const int64_t stride = k > 0 && rng() % 2 ? 2 : 1;
      s.length = k == 0 ? 3 * machines + static_cast<int64_t>(rng() % 6) : previous_length / stride;
      s.threshold_percent = 30 + rng() % 30;
      ChainLayer layer;
      layer.candidates = enumerate_partitions(s, 60);
      if (layer.candidates.empty()) combinations = 0;  // a space too large to enumerate
      for (double speed : speeds) layer.seconds_per_index.push_back(1e-3 * (1 + rng() % 3) / speed);
      if (k > 0) {
        const int64_t halo = rng() % 3, limit = previous_length;
        layer.reads = [stride, halo, limit](const Interval& rows) {
          return Interval{std::max<int64_t>(0, rows.begin * stride - halo),
                          std::min(limit, (rows.end - 1) * stride + 1 + halo)};
        };
        layer.bytes_per_previous_index = 500.0 * (1 + rng() % 4);
        if (rng() % 2)  // tiles fused: a missing row may be computed again instead
          for (double speed : speeds)
            layer.recompute_seconds_per_previous_index.push_back(1e-3 * (1 + rng() % 3) / speed);
      }
      combinations *= std::max<std::size_t>(1, layer.candidates.size());
      previous_length = s.length;
      chain.push_back(std::move(layer));
    }
    if (combinations == 0 || combinations > 200000) continue;
    ++compared;
    const double expected = brute_force_chain(chain, links);
    ChainResult r = search_chain_seconds(chain, links);
    ASSERT_EQ(r.best.size(), chain.size()) << trial;
    EXPECT_DOUBLE_EQ(r.value, expected) << "trial " << trial;
    EXPECT_DOUBLE_EQ(chain_seconds(chain, links, r.best), expected) << "trial " << trial;
  }
  EXPECT_GT(compared, 20);
}

// Changing shares between layers costs the rows a machine reads and no longer holds:
// previous [0,5) [5,10), now [0,3) [3,10), each row reading one row either side. Machine 1
// reads rows 2..9 and holds 5..9: it receives rows 2, 3 and 4 from machine 0; machine 0 reads
// 0..3, which it holds.
TEST(SearchChain, ReDistributionCostsTheRowsAMachineNoLongerHolds) {
  ChainLayer layer;
  layer.seconds_per_index = {1, 1};
  layer.reads = [](const Interval& r) {
    return Interval{std::max<int64_t>(0, r.begin - 1), std::min<int64_t>(10, r.end + 1)};
  };
  layer.bytes_per_previous_index = 100;
  SplitCostModel links;
  links.bytes_per_second = 50;
  links.latency_seconds = 0.5;
  const std::vector<Interval> before{{0, 5}, {5, 10}};
  // machine 0: 3 s; machine 1: 7 s + 0.5 s + 300 bytes / 50 = 13.5 s.
  EXPECT_DOUBLE_EQ(chain_layer_seconds(layer, links, &before, {{0, 3}, {3, 10}}), 13.5);
  // Unchanged shares: each side receives its one halo row: 5 + 0.5 + 2 = 7.5 s.
  EXPECT_DOUBLE_EQ(chain_layer_seconds(layer, links, &before, {{0, 5}, {5, 10}}), 7.5);
  // Fused tiles: machine 1 computes rows 2..4 again (3 x 1 s) instead of receiving them.
  layer.recompute_seconds_per_previous_index = {1, 1};
  EXPECT_DOUBLE_EQ(chain_layer_seconds(layer, links, &before, {{0, 3}, {3, 10}}), 10);
}

TEST(SearchChain, EnumeratesEveryPartitionOfASmallSpaceOnly) {
  SearchSpace s;
  s.length = 6;
  s.speeds = {1, 1};
  s.threshold_percent = 34;  // sizes 2..4 of 3
  auto all = enumerate_partitions(s, 100);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], (std::vector<Interval>{{0, 2}, {2, 6}}));
  EXPECT_EQ(all[2], (std::vector<Interval>{{0, 4}, {4, 6}}));
  EXPECT_TRUE(enumerate_partitions(s, 2).empty());
}

// Three equal machines, the link between 0 and 1 slow, two convolutions with a ReLU between:
// the second convolution reads a halo of the first, so the chain gives machine 2 more rows
// there, and the ReLU takes its convolution's shares (nothing moves between them).
constexpr const char* kChain = R"(graph main [ai.onnx=17] (%x: f32[1,8,60,60]) {
  @w1: f32[8,8,3,3]
  @w2: f32[8,8,3,3]
  %y: f32[1,8,60,60] = "conv1" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r: f32[1,8,60,60] = "relu" Relu(%y)
  %z: f32[1,8,60,60] = "conv2" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r, @w2)
  return %z
})";

SplitModelOptions slow_link_options() {
  SplitModelOptions o;
  o.split.machines = 3;
  o.split.dim = SplitDim::kH;
  o.cost.flops_per_second = 1e9;
  o.cost.bandwidth.assign(3, std::vector<double>(3, 1e9));
  o.cost.latency.assign(3, std::vector<double>(3, 1e-5));
  o.cost.bandwidth[0][1] = o.cost.bandwidth[1][0] = 2e6;  // 2 MB/s between 0 and 1
  o.fuse = false;  // halos are received, never computed again
  return o;
}

TEST(SearchChain, SlowLinkMovesRowsAndActivationsFollowTheirConvolution) {
  Graph g = parse_graph(kChain);
  auto picked = searched_layer_configs(g, slow_link_options(), {}, 20, SearchObjective::kSeconds);
  ASSERT_EQ(picked.count("conv1"), 1u);
  ASSERT_EQ(picked.count("conv2"), 1u);
  ASSERT_EQ(picked.count("relu"), 1u);
  EXPECT_EQ(picked["relu"].shares, picked["conv1"].shares);
  const auto& second = picked["conv2"].shares;
  ASSERT_EQ(second.size(), 3u);
  EXPECT_GT(second[2], 20);
  EXPECT_LT(second[0] + second[1], 40);
}

// With fused tiles a machine computes its one-row halo again rather than wait on the slow
// link, so nothing is worth moving: the chain keeps the balanced shares.
TEST(SearchChain, FusedTilesMakeTheSlowLinkIrrelevant) {
  Graph g = parse_graph(kChain);
  SplitModelOptions o = slow_link_options();
  o.fuse = true;
  auto picked = searched_layer_configs(g, o, {}, 20, SearchObjective::kSeconds);
  EXPECT_EQ(picked["conv2"].shares, (std::vector<double>{20, 20, 20}));
}

TEST(SearchChain, TermsObjectiveGivesActivationsTheirConvolutionsShares) {
  Graph g = parse_graph(kChain);
  SplitModelOptions o;
  o.split.machines = 2;
  o.cost.speeds = {1, 3};
  auto picked = searched_layer_configs(g, o, {});
  EXPECT_EQ(picked["conv1"].shares, (std::vector<double>{15, 45}));
  EXPECT_EQ(picked["relu"].shares, picked["conv1"].shares);
}

}  // namespace
}  // namespace cleave
