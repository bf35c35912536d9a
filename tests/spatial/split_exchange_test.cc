// The partition search prices a layer's halo exchange as the simulator does: the sender's end
// of each message (its copy, cleave's cost per message) and a shared link's queue.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "machine/machine.h"
#include "spatial/search_chain.h"
#include "spatial/search_seconds.h"
#include "spatial/split_machine.h"
#include "spatial/split_model.h"
#include "split_testing.h"

namespace cleave {
namespace {

// `n` ranks of a core each, 100 bytes/s and 0.5 s latency between any two; `extra` adds fields.
Machine ranks(int n, const std::string& extra) {
  nlohmann::json json = nlohmann::json::parse(R"({"name": "r", "bandwidth": 100, "latency": 0.5})");
  for (int k = 0; k < n; ++k) json["devices"].push_back({{"name", "rank" + std::to_string(k)}});
  if (!extra.empty()) json.update(nlohmann::json::parse(extra));
  return machine_from_json(json, "r.json");
}

SplitModelOptions on(const Machine& machine) {
  SplitModelOptions o;
  o.split.machines = static_cast<int>(machine.size());
  o.split.dim = SplitDim::kH;
  use_split_machine(machine, "r.json", static_cast<int>(machine.size()), o);
  return o;
}

TEST(SplitExchange, OnASharedLinkTheHalosOfDifferentPairsCrossInTurn) {
  // The middle machine sends 100 bytes to each neighbour (1 s each on the wire). Links of their
  // own: both there at 1.5 s. One medium: 0's crosses 0-1 s (1.5), 2's 1-2 s (2.5).
  const std::vector<HaloMessage> halos = {{1, 0, 100}, {1, 2, 100}};
  EXPECT_EQ(on(ranks(3, "")).cost.exchange_seconds(halos, 3), (std::vector<double>{1.5, 0, 1.5}));
  EXPECT_EQ(on(ranks(3, R"({"shared_link": true})")).cost.exchange_seconds(halos, 3),
            (std::vector<double>{1.5, 0, 2.5}));
  // A 50-byte burst lets the second through half a second ahead of the rate.
  EXPECT_EQ(on(ranks(3, R"({"shared_link": true, "link_burst_bytes": 50})"))
                .cost.exchange_seconds(halos, 3),
            (std::vector<double>{1.0, 0, 2.0}));
}

TEST(SplitExchange, TheSenderPaysItsEndOfEachMessageBeforeItLeaves) {
  // 10 bytes (0.6 s on the link). cleave's cost per message sent, 2 s: the sender is busy 2 s
  // and the message is there at 2.5 s (its end, then the latency), not 0.6.
  const std::vector<HaloMessage> halo = {{0, 1, 10}};
  EXPECT_EQ(on(ranks(2, "")).cost.exchange_seconds(halo, 2), (std::vector<double>{0, 0.6}));
  const SplitCostModel sending = on(ranks(2, R"({"send_seconds": 2})")).cost;
  EXPECT_EQ(sending.exchange_seconds(halo, 2), (std::vector<double>{2, 2.5}));
  // Its copy too (10 bytes/s at each end: 1 s), and at half speed both take twice as long.
  const SplitCostModel copying = on(ranks(2, R"({"send_seconds": 2, "endpoint_bandwidth": 10,
                      "devices": [{"name": "p", "speed": 0.5}, {"name": "q"}]})"))
                                     .cost;
  EXPECT_DOUBLE_EQ(copying.send_seconds(0, 10), 6);
  // There at 6.5; the receiver, waiting, copies it as it comes.
  EXPECT_EQ(copying.exchange_seconds(halo, 2), (std::vector<double>{6, 6.5}));
}

TEST(SplitExchange, TheSearchComputesTheHaloTwiceWhenSendingItCostsMore) {
  // Ten rows of 10 us, a halo of one 100-byte row, overlap allowed, 100 bytes/us, no latency.
  const auto two = [](const std::string& extra) {
    return on(machine_from_json(nlohmann::json::parse(R"({"devices": [{"name": "p"}, {"name": "q"}],
          "bandwidth": [[0, 1e8], [1e8, 0]], "latency": [[0, 0], [0, 0]])" +
                                                      extra + "}"),
                                "two.json"));
  };
  SearchSpace space;
  space.length = 10;
  space.speeds = {1, 1};
  space.threshold_percent = 50;
  space.overlap = true;
  SecondsModel model;
  model.seconds_per_index = {1e-5, 1e-5};
  model.bytes_per_index = 100;
  model.halo = 1;
  model.links = two("").cost;
  const SearchResult plain = search_partition_seconds(space, model);
  EXPECT_EQ(plain.best, (std::vector<Interval>{{0, 5}, {5, 10}}));
  EXPECT_DOUBLE_EQ(plain.value, 5.1e-5);
  // Each machine sends its neighbour a row (20 us each) and receives one: 71 us against 60 us
  // for computing a row twice.
  model.links = two(R"(, "send_seconds": 2e-5)").cost;
  EXPECT_DOUBLE_EQ(partition_seconds(space, model, plain.best), 7.1e-5);
  const SearchResult sending = search_partition_seconds(space, model);
  ASSERT_EQ(sending.best.size(), 2u);
  EXPECT_GT(sending.best[0].end, sending.best[1].begin);  // overlapped: no message
  EXPECT_DOUBLE_EQ(sending.value, 6e-5);
}

TEST(SplitExchange, TheChainSearchQueuesALayersHalosOnASharedLink) {
  // Three machines of a 9-row layer, each row 1 s, reading one row each side of its own from a
  // layer split the same way: the middle machine receives a row from each neighbour and each
  // neighbour one from it (4 messages of 100 bytes, 1 s each on the wire, 0.5 s latency).
  ChainLayer layer;
  layer.seconds_per_index = {1, 1, 1};
  layer.bytes_per_previous_index = 100;
  layer.reads = [](const Interval& rows) {
    return Interval{std::max<int64_t>(0, rows.begin - 1), std::min<int64_t>(9, rows.end + 1)};
  };
  const std::vector<Interval> thirds = {{0, 3}, {3, 6}, {6, 9}};
  // Links of their own: the middle machine's two messages queue on its link (3 s), 6 s.
  EXPECT_DOUBLE_EQ(chain_layer_seconds(layer, on(ranks(3, "")).cost, &thirds, thirds), 6);
  // One medium: 0->1 0-1 s, 1->0 1-2 s, 1->2 2-3 s, 2->1 3-4 s; machine 2 has its row at
  // 3.5 s, machine 1 its last at 4.5 s: 7.5 s.
  EXPECT_DOUBLE_EQ(
      chain_layer_seconds(layer, on(ranks(3, R"({"shared_link": true})")).cost, &thirds, thirds),
      7.5);
}

TEST(SplitExchange, TheSplitsListSchedulePaysTheSendersAndTheSharedLink) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,3,24,24]) {
  @w1: f32[8,3,3,3]
  @w2: f32[8,8,3,3]
  %c1: f32[1,8,24,24] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %c2: f32[1,8,24,24] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%c1, @w2)
  return %c2
})");
  const auto predicted = [&](const std::string& extra) {
    SplitModelOptions options = on(ranks(3, extra));
    options.fuse = false;  // the halos are sent
    const SplitResult r = split_model(g, options);
    EXPECT_GT(r.report.optimized.transfers, 0);
    return r.report.optimized.predicted_seconds;
  };
  const double own = predicted("");
  // The halos and the gather to machine 0 queue on one medium: later.
  EXPECT_GT(predicted(R"({"shared_link": true})"), own + 0.5);
  // On a fast link, each message costing its sender 1 s more: machine 1 sends its two halos
  // before either leaves, then its rows of the output to machine 0, one after another.
  const double fast = predicted(R"({"bandwidth": 1e12, "latency": 0})");
  EXPECT_GE(predicted(R"({"bandwidth": 1e12, "latency": 0, "send_seconds": 1})"), fast + 3 - 1e-9);
}

}  // namespace
}  // namespace cleave
