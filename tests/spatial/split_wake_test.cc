// The partition search and the split's prediction price a message's receiving end as the
// simulator does: a machine file's wake_seconds makes every halo a rank waits for dearer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "machine/machine.h"
#include "spatial/search_seconds.h"
#include "spatial/split_machine.h"
#include "spatial/split_model.h"
#include "split_testing.h"

namespace cleave {
namespace {

// Two ranks of a core each, 100 bytes/us between them, no latency; `ends` adds the message
// ends' fields (empty: a message is its transfer).
Machine two_ranks(const std::string& ends) {
  return machine_from_json(nlohmann::json::parse(R"({"name": "two",
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 1e8], [1e8, 0]], "latency": [[0, 0], [0, 0]])" +
                                                 ends + "}"),
                           "two.json");
}

SplitModelOptions on(const Machine& machine) {
  SplitModelOptions o;
  o.split.machines = 2;
  o.split.dim = SplitDim::kH;
  use_split_machine(machine, "two.json", 2, o);
  return o;
}

// Ten rows of 10 us each, a halo of one 100-byte row (1 us over the link), overlap allowed.
SecondsModel ten_rows(const Machine& machine) {
  SecondsModel model;
  model.seconds_per_index = {1e-5, 1e-5};
  model.bytes_per_index = 100;
  model.halo = 1;
  model.links = on(machine).cost;
  return model;
}

SearchSpace ten_row_space() {
  SearchSpace space;
  space.length = 10;
  space.speeds = {1, 1};
  space.threshold_percent = 50;
  space.overlap = true;
  return space;
}

TEST(SplitWake, AHaloCostsItsTransferAndTheWakeUpOfItsWait) {
  const Machine plain = two_ranks("");
  const Machine waking = two_ranks(R"(, "wake_seconds": 2e-5)");
  // The receiver waits the whole 1 us transfer, then one poll's wake-up (a core of its own).
  EXPECT_DOUBLE_EQ(on(plain).cost.receive_seconds(0, 1, 100), 1e-6);
  EXPECT_DOUBLE_EQ(on(waking).cost.receive_seconds(0, 1, 100), 1e-6 + 2e-5);
  EXPECT_DOUBLE_EQ(on(waking).cost.receive_seconds(0, 1, 100),
                   waking.message_taken(1, 0, waking.transfer_time(0, 1, 100), 100));
  // Five rows each and a halo each way: 50 us + 1 us, and with the wake-up 20 us more.
  const std::vector<Interval> halves = {{0, 5}, {5, 10}};
  EXPECT_DOUBLE_EQ(partition_seconds(ten_row_space(), ten_rows(plain), halves), 5.1e-5);
  EXPECT_DOUBLE_EQ(partition_seconds(ten_row_space(), ten_rows(waking), halves), 7.1e-5);
}

TEST(SplitWake, TheSearchComputesTheHaloTwiceWhenWakingForItCostsMore) {
  // Without the wake-up, receiving the halo (51 us) beats computing a row twice (60 us); with
  // it (71 us) the search overlaps the machines' rows and sends nothing.
  const SearchResult plain = search_partition_seconds(ten_row_space(), ten_rows(two_ranks("")));
  EXPECT_EQ(plain.best, (std::vector<Interval>{{0, 5}, {5, 10}}));
  EXPECT_DOUBLE_EQ(plain.value, 5.1e-5);
  const SearchResult waking =
      search_partition_seconds(ten_row_space(), ten_rows(two_ranks(R"(, "wake_seconds": 2e-5)")));
  ASSERT_EQ(waking.best.size(), 2u);
  EXPECT_GT(waking.best[0].end, waking.best[1].begin);  // overlapped: no message
  EXPECT_DOUBLE_EQ(waking.value, 6e-5);
}

TEST(SplitWake, TheSplitsPredictionPaysTheWakeUpOfEachMessageItWaitsFor) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,3,16,16]) {
  @w1: f32[8,3,3,3]
  @w2: f32[8,8,3,3]
  %c1: f32[1,8,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %c2: f32[1,8,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%c1, @w2)
  return %c2
})");
  SplitModelOptions plain = on(two_ranks(""));
  SplitModelOptions waking = on(two_ranks(R"(, "wake_seconds": 1e-3)"));
  plain.fuse = waking.fuse = false;  // the halos are sent
  const SplitResult a = split_model(g, plain), b = split_model(g, waking);
  ASSERT_GT(a.report.optimized.transfers, 0);
  // Each rank waits for its neighbour's halo, and machine 0 for machine 1's rows of the output:
  // at least two waits in a row on the critical path, each 1 ms (a poll on a core of its own).
  EXPECT_GE(b.report.optimized.predicted_seconds - a.report.optimized.predicted_seconds,
            2e-3 - 1e-9);
}

}  // namespace
}  // namespace cleave
