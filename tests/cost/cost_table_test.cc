// The measured profile: node times calibrated to whole runs, cached, and read back.
#include "cost/cost_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "cost/profile_level.h"
#include "frontend/costs.h"
#include "ir/text.h"
#include "runtime/cpu_isa.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

const char* kBranches = R"(graph main [ai.onnx=17] (%x: f32[1,8,16,16]) {
  @w: f32[8,8,3,3]
  %a = Conv[pads=[1,1,1,1]](%x, @w)
  %b = Relu(%x)
  %c = Add(%a, %b)
  %y = Sigmoid(%c)
  return %y
}
)";

Graph with_weights(const char* text) {
  Graph graph = parse_graph(text);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    if (!data.has_data()) {
      data = TensorData::from(
          DataType::kFloat, data.dims,
          std::vector<float>(static_cast<std::size_t>(data.element_count()), 0.01f));
    }
  }
  return graph;
}

class ProfileCosts : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("cleave_profile_test_" +
                  std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    options_ = profile_options(2);
    options_.repeat = 3;
    options_.warmup = 1;
    options_.cache_directory = directory_.string();
    // Tests run side by side: the real check would see the others as processes that hold
    // the cores. Tests that are about that check set their own.
    options_.cores_free = [](int) { return true; };
    // The reference kernel as fast as ever: a cached table is reused after its check.
    options_.reuse = ProfileReuse::kCheck;
    options_.host_conditions = [](int threads) { return ProfileConditions{1e-3, threads, 0.5}; };
    // The table as cached: a reused one's level check (profile_level_test.cc) rescales it.
    options_.level.when = LevelCheck::kOff;
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path directory_;
  ProfileOptions options_;
};

// Exactly `blocks` blocks: no extension for blocks that disagree.
InterleavedTiming fixed_blocks(int blocks, int runs_per_block, double min_block_seconds = 0) {
  InterleavedTiming timing;
  timing.blocks = timing.max_blocks = blocks;
  timing.runs_per_block = runs_per_block;
  timing.min_block_seconds = min_block_seconds;
  return timing;
}

// A fake clock that each call of a run advances by the time its entry takes in that block:
// entry 1 (say two threads) is disturbed in the first block, entry 0 in the last.
TEST(InterleavedRunSeconds, EachEntryKeepsItsUndisturbedBlock) {
  double clock = 0;
  int block = 0;
  std::vector<int> calls(2, 0);
  const std::vector<std::vector<double>> seconds = {{7.0, 7.2, 14.0}, {8.0, 4.0, 4.1}};
  const int runs_per_block = 3;
  std::vector<std::function<void()>> runs;
  for (int entry = 0; entry < 2; ++entry) {
    runs.push_back([&, entry] {
      clock += seconds[entry][block];
      if (++calls[entry] % runs_per_block == 0 && entry == 1) ++block;
    });
  }
  std::vector<double> measured =
      interleaved_run_seconds(runs, fixed_blocks(3, runs_per_block), [&] { return clock; }).seconds;
  EXPECT_EQ(calls, (std::vector<int>{9, 9}));
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_DOUBLE_EQ(measured[0], 7.0);
  EXPECT_DOUBLE_EQ(measured[1], 4.0);
}

// One slow call in a block does not move that block's time: it is a median.
TEST(InterleavedRunSeconds, AnOutlierCallInsideABlockIsIgnored) {
  double clock = 0;
  int call = 0;
  const std::vector<double> seconds = {2.0, 9.0, 2.0, 2.1, 2.1, 2.1};
  std::vector<std::function<void()>> runs = {[&] { clock += seconds[call++]; }};
  std::vector<double> measured =
      interleaved_run_seconds(runs, fixed_blocks(2, 3), [&] { return clock; }).seconds;
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_DOUBLE_EQ(measured[0], 2.0);
}

// A fast run keeps being called until its block has lasted the minimum, so that blocks lie
// apart in time: 3 calls of 0.25 s fill a 0.6 s block (0.75 s), 1 s calls need only the 2.
TEST(InterleavedRunSeconds, ABlockLastsAtLeastTheMinimum) {
  double clock = 0;
  std::vector<int> calls(2, 0);
  std::vector<std::function<void()>> runs = {[&] { clock += 0.25, ++calls[0]; },
                                             [&] { clock += 1.0, ++calls[1]; }};
  std::vector<double> measured =
      interleaved_run_seconds(runs, fixed_blocks(2, 2, 0.6), [&] { return clock; }).seconds;
  EXPECT_EQ(calls, (std::vector<int>{6, 4}));
  EXPECT_DOUBLE_EQ(measured[0], 0.25);
  EXPECT_DOUBLE_EQ(measured[1], 1.0);
}

// Entry 0's blocks agree from the start; entry 1 (say two threads) is disturbed for its first
// four blocks, each at a different speed, so it gets blocks until two agree: its fifth and
// sixth. Entry 0 is not timed again meanwhile.
TEST(InterleavedRunSeconds, AnEntryWhoseBlocksDisagreeGetsMoreBlocks) {
  double clock = 0;
  std::vector<int> calls(2, 0);
  const std::vector<double> disturbed = {9.0, 7.0, 8.0, 6.5, 4.0, 4.1, 4.0};
  std::vector<std::function<void()>> runs = {[&] { clock += 5.0, ++calls[0]; },
                                             [&] { clock += disturbed[calls[1]++]; }};
  InterleavedTiming timing = fixed_blocks(3, 1);
  timing.max_blocks = 8;
  timing.agreement = 0.05;
  InterleavedResult measured = interleaved_run_seconds(runs, timing, [&] { return clock; });
  EXPECT_EQ(calls, (std::vector<int>{3, 6}));
  EXPECT_EQ(measured.blocks_timed, (std::vector<int>{3, 6}));
  EXPECT_EQ(measured.blocks_disturbed, (std::vector<int>{0, 0}));
  EXPECT_DOUBLE_EQ(measured.seconds[0], 5.0);
  EXPECT_DOUBLE_EQ(measured.seconds[1], 4.0);
}

// A disturbance that never ends stops at max_blocks and keeps the fastest block seen.
TEST(InterleavedRunSeconds, BlocksThatNeverAgreeStopAtTheMaximum) {
  double clock = 0;
  int calls = 0;
  std::vector<std::function<void()>> runs = {[&] { clock += 10.0 - calls++; }};
  InterleavedTiming timing = fixed_blocks(3, 1);
  timing.max_blocks = 5;
  InterleavedResult measured = interleaved_run_seconds(runs, timing, [&] { return clock; });
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(measured.blocks_timed, (std::vector<int>{5}));
  EXPECT_DOUBLE_EQ(measured.seconds[0], 6.0);
}

// A disturbance through every block makes them agree at the wrong speed: entry 1's first
// three blocks agree at 8 s, but `quiet` calls them disturbed, so the entry keeps getting
// blocks and its time comes from the two quiet ones (4.0 and 4.1), not from the 8 s blocks.
TEST(InterleavedRunSeconds, BlocksTheHostCallsDisturbedAreSetAside) {
  double clock = 0;
  std::vector<int> calls(2, 0);
  const std::vector<double> entry_one = {8.0, 8.0, 8.1, 4.0, 4.1, 4.0};
  std::vector<std::function<void()>> runs = {[&] { clock += 5.0, ++calls[0]; },
                                             [&] { clock += entry_one[calls[1]++]; }};
  InterleavedTiming timing = fixed_blocks(3, 1);
  timing.max_blocks = 8;
  std::vector<std::size_t> asked;
  // Asked before and after each block; entry 1 is held until its fourth block starts.
  timing.quiet = [&](std::size_t entry) {
    asked.push_back(entry);
    return entry == 0 || calls[1] >= 3;
  };
  InterleavedResult measured = interleaved_run_seconds(runs, timing, [&] { return clock; });
  EXPECT_EQ(calls, (std::vector<int>{3, 5}));
  EXPECT_EQ(measured.blocks_timed, (std::vector<int>{3, 5}));
  EXPECT_EQ(measured.blocks_disturbed, (std::vector<int>{0, 3}));
  EXPECT_DOUBLE_EQ(measured.seconds[0], 5.0);
  EXPECT_DOUBLE_EQ(measured.seconds[1], 4.0);
  EXPECT_EQ(asked.size(), 2u * (3 + 5));
}

// A block is disturbed when the host is held after it, even if it was free before.
TEST(InterleavedRunSeconds, ABlockHeldOnlyAtItsEndIsDisturbed) {
  double clock = 0;
  int calls = 0;
  std::vector<std::function<void()>> runs = {[&] { clock += calls++ == 0 ? 3.0 : 6.0; }};
  InterleavedTiming timing = fixed_blocks(2, 1);
  int asked = 0;
  timing.quiet = [&](std::size_t) { return ++asked != 2; };  // "No" after the first block.
  InterleavedResult measured = interleaved_run_seconds(runs, timing, [&] { return clock; });
  EXPECT_EQ(measured.blocks_disturbed, (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(measured.seconds[0], 6.0);
}

// With no quiet block at all, an entry still gets a time: its fastest disturbed block.
TEST(InterleavedRunSeconds, AnEntryWithOnlyDisturbedBlocksKeepsTheFastest) {
  double clock = 0;
  int calls = 0;
  const std::vector<double> seconds = {9.0, 7.0, 8.0};
  std::vector<std::function<void()>> runs = {[&] { clock += seconds[calls++]; }};
  InterleavedTiming timing = fixed_blocks(3, 1);
  timing.quiet = [](std::size_t) { return false; };
  InterleavedResult measured = interleaved_run_seconds(runs, timing, [&] { return clock; });
  EXPECT_EQ(measured.blocks_timed, (std::vector<int>{3}));
  EXPECT_EQ(measured.blocks_disturbed, (std::vector<int>{3}));
  EXPECT_DOUBLE_EQ(measured.seconds[0], 7.0);
}

TEST_F(ProfileCosts, NodeTimesSumToTheMeasuredRunAtEachThreadCount) {
  Graph graph = with_weights(kBranches);
  CostTable table = profile_costs(graph, options_);
  ASSERT_EQ(table.run_seconds.size(), 2u);
  ASSERT_EQ(table.calibration.size(), 2u);
  for (int threads = 1; threads <= 2; ++threads) {
    EXPECT_GT(table.run_seconds[threads - 1], 0.0);
    EXPECT_GT(table.calibration[threads - 1], 0.0);
    EXPECT_NEAR(table.total_seconds(threads), table.run_seconds[threads - 1],
                1e-9 * table.run_seconds[threads - 1]);
  }
  for (NodeId id : graph.node_ids()) EXPECT_EQ(table.nodes[id].seconds.size(), 2u);
}

TEST_F(ProfileCosts, ASecondCallReadsTheCachedTable) {
  Graph graph = with_weights(kBranches);
  CostTable first = profile_costs(graph, options_);
  std::vector<std::string> progress;
  options_.progress = [&](const std::string& line) { progress.push_back(line); };
  CostTable second = profile_costs(graph, options_);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_NE(progress[0].find("reused"), std::string::npos) << progress[0];
  EXPECT_EQ(second.run_seconds, first.run_seconds);
  EXPECT_EQ(second.calibration, first.calibration);
  for (NodeId id : graph.node_ids()) EXPECT_EQ(second.nodes[id].seconds, first.nodes[id].seconds);
}

// A profile made on another ISA (another CPU, or this one under another cap) is not read.
TEST_F(ProfileCosts, ATableOfAnotherIsaIsNotRead) {
  Graph graph = with_weights(kBranches);
  profile_costs(graph, options_);
  const std::string here = "-" + isa_cache_key() + "-";
  const std::string other = isa_cache_key() == "avx2" ? "-avx512_core-" : "-avx2-";
  const fs::path cached = *fs::directory_iterator(directory_);
  std::string name = cached.filename().string();
  const std::size_t at = name.find(here);
  ASSERT_NE(at, std::string::npos) << name << " does not name the ISA " << isa_cache_key();
  fs::rename(cached, directory_ / name.replace(at, here.size(), other));
  std::vector<std::string> progress;
  options_.progress = [&](const std::string& line) { progress.push_back(line); };
  profile_costs(graph, options_);
  for (const std::string& line : progress)
    EXPECT_EQ(line.find("reused"), std::string::npos) << line;
}

// Cores that another process holds all along: the profile waits its budget, times anyway, sets
// the blocks aside in the table and says so.
TEST_F(ProfileCosts, CoresHeldThroughoutAreWaitedForWithinTheBudgetAndReported) {
  Graph graph = with_weights(kBranches);
  options_.in_context = false;  // Blocks of whole runs: the alone profile's.
  std::vector<int> asked_threads;
  options_.cores_free = [&](int threads) {
    asked_threads.push_back(threads);
    return threads < 2;
  };
  options_.quiet_wait_seconds = 0.2;
  std::vector<std::string> progress;
  options_.progress = [&](const std::string& line) { progress.push_back(line); };
  const auto started = std::chrono::steady_clock::now();
  CostTable table = profile_costs(graph, options_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(table.disturbed_blocks.size(), 2u);
  EXPECT_EQ(table.disturbed_blocks[0], 0);
  EXPECT_EQ(table.disturbed_blocks[1], 8);  // Never two undisturbed blocks: up to the maximum.
  EXPECT_TRUE(std::isfinite(table.run_seconds[1]));
  EXPECT_GE(seconds, 0.2);  // The budget was spent waiting...
  EXPECT_TRUE(std::none_of(asked_threads.begin(), asked_threads.end(),
                           [](int threads) { return threads < 2; }));  // ...for 2 threads only.
  const auto said = [&](const std::string& text) {
    return std::any_of(progress.begin(), progress.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  };
  EXPECT_TRUE(said("another process held a core"));
  EXPECT_TRUE(said("every block at 2 thread(s)"));
  const fs::path cached = *fs::directory_iterator(directory_);
  std::ifstream in(cached);
  EXPECT_EQ(nlohmann::json::parse(in)["disturbed_blocks"], (std::vector<int>{0, 8}));
}

// Cores held for a moment: the profile waits until they are free, then times as usual; no
// block is set aside and the table is cached.
TEST_F(ProfileCosts, AShortHoldIsWaitedOut) {
  Graph graph = with_weights(kBranches);
  options_.in_context = false;  // Blocks of whole runs: the alone profile's.
  int checks = 0;
  options_.cores_free = [&](int threads) { return threads < 2 || ++checks > 3; };
  options_.quiet_wait_seconds = 10;
  std::vector<std::string> progress;
  options_.progress = [&](const std::string& line) { progress.push_back(line); };
  CostTable table = profile_costs(graph, options_);
  EXPECT_EQ(table.disturbed_blocks, (std::vector<int>{0, 0}));
  EXPECT_TRUE(std::any_of(progress.begin(), progress.end(), [](const std::string& line) {
    return line.find("another process held a core at 1 check(s)") != std::string::npos;
  }));
  std::vector<std::string> again;
  options_.progress = [&](const std::string& line) { again.push_back(line); };
  profile_costs(graph, options_);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0].find("reused"), std::string::npos);
}

TEST_F(ProfileCosts, ATableForAnotherGraphIsRefused) {
  Graph graph = with_weights(kBranches);
  CostTable table = profile_costs(graph, options_);
  Graph other = with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,8,16,16]) {
  %y = Relu(%x)
  return %y
}
)");
  EXPECT_THROW(cost_table_from_json(cost_table_to_json(table, graph), other, "table.json"), Error);
}

bool said(const std::vector<std::string>& progress, const std::string& text) {
  return std::any_of(progress.begin(), progress.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

TEST_F(ProfileCosts, InContextEveryNodeHasATimeBesideABusyCore) {
  Graph graph = with_weights(kBranches);
  const CostTable table = profile_costs(graph, options_);
  EXPECT_EQ(table.context, "in-context");
  EXPECT_EQ(table.busy_neighbours, 1);
  EXPECT_GT(table.busy_run_seconds, 0.0);
  ASSERT_TRUE(table.has_busy_seconds());
  double busy_total = 0;
  for (NodeId id : graph.node_ids()) {
    ASSERT_TRUE(table.nodes[id].busy_seconds.has_value()) << graph.node(id).name;
    busy_total += *table.nodes[id].busy_seconds;
  }
  // Scaled, as the times alone are, to the median whole run beside the busy core.
  EXPECT_NEAR(busy_total, table.busy_run_seconds, 1e-9 * table.busy_run_seconds);
}

TEST_F(ProfileCosts, InContextAndAloneProfilesAreCachedUnderTheirOwnKeys) {
  Graph graph = with_weights(kBranches);
  profile_costs(graph, options_);
  options_.in_context = false;
  std::vector<std::string> progress;
  options_.progress = [&](const std::string& line) { progress.push_back(line); };
  const CostTable alone = profile_costs(graph, options_);
  EXPECT_FALSE(said(progress, "reused"));
  EXPECT_EQ(alone.context, "alone");
  EXPECT_FALSE(alone.has_busy_seconds());
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory_))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0].find("-v6.json"), std::string::npos) << names[0];
  EXPECT_NE(names[1].find("-v7ctx.json"), std::string::npos) << names[1];
}

TEST_F(ProfileCosts, ATruncatedCachedTableIsMeasuredAgain) {
  Graph graph = with_weights(kBranches);
  profile_costs(graph, options_);
  const fs::path cached = *fs::directory_iterator(directory_);
  const auto size = fs::file_size(cached);
  fs::resize_file(cached, size / 2);
  std::vector<std::string> progress;
  options_.progress = [&](const std::string& line) { progress.push_back(line); };
  const CostTable table = profile_costs(graph, options_);
  EXPECT_TRUE(said(progress, "cached table not used, measuring again"));
  EXPECT_TRUE(table.has_busy_seconds());
  std::ifstream in(cached);
  EXPECT_NO_THROW(cost_table_from_json(nlohmann::json::parse(in), graph, cached.string()));
}

// A table that is in context but lacks a node's busy time (an edited or older file): the
// error names the file, the node's entry and the field.
TEST_F(ProfileCosts, AnInContextTableWithoutABusyTimeIsRefusedNamingTheNode) {
  Graph graph = with_weights(kBranches);
  nlohmann::json json = cost_table_to_json(profile_costs(graph, options_), graph);
  json["nodes"][2].erase("busy_seconds");
  try {
    cost_table_from_json(json, graph, "table.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("table.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nodes[2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("busy_seconds"), std::string::npos) << e.what();
  }
  json["nodes"][2]["busy_seconds"] = -1;
  EXPECT_THROW(cost_table_from_json(json, graph, "table.json"), Error);
  json["nodes"][2]["busy_seconds"] = 1e-3;
  json["context"] = "sideways";
  try {
    cost_table_from_json(json, graph, "table.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context"), std::string::npos) << e.what();
  }
}

// Only 1 thread is timed beside busy cores: more threads keep the node's own speedup.
TEST(BusySeconds, ScaleByTheNodesOwnSpeedupAndFallBackToTheTimeAlone) {
  CostTable table;
  table.nodes.resize(2);
  table.nodes[0].seconds = {2.0, 1.0};
  table.nodes[0].busy_seconds = 3.0;
  table.nodes[1].seconds = {4.0, 2.5};
  EXPECT_TRUE(table.has_busy_seconds());
  EXPECT_DOUBLE_EQ(table.busy_seconds(0, 1), 3.0);
  EXPECT_DOUBLE_EQ(table.busy_seconds(0, 2), 1.5);
  EXPECT_DOUBLE_EQ(table.busy_seconds(1, 2), 2.5);
  table.nodes[0].busy_seconds.reset();
  EXPECT_FALSE(table.has_busy_seconds());
}

// Cores that compute at once never speed each other up: a busy run timed faster than the run
// alone caught the host at another speed, and every busy time is raised to the alone level.
TEST(BusySeconds, ABusyRunTimedFasterThanAloneIsPricedAtTheAloneLevel) {
  CostTable table;
  table.nodes.resize(2);
  table.nodes[0].seconds = {4.0, 2.5};
  table.nodes[0].busy_seconds = 3.0;
  table.nodes[1].seconds = {2.0, 1.0};
  table.nodes[1].busy_seconds = 1.8;
  table.run_seconds = {6.0, 3.5};
  table.busy_run_seconds = 4.8;  // 0.8x alone
  EXPECT_DOUBLE_EQ(table.busy_level(), 1.25);
  EXPECT_DOUBLE_EQ(table.busy_seconds(0, 1), 3.75);
  EXPECT_DOUBLE_EQ(table.busy_seconds(0, 2), 3.75 * 2.5 / 4.0);
  EXPECT_DOUBLE_EQ(table.busy_seconds(1, 1), 2.25);
  // The level check scales both runs alike: the ratio, and the level, stay.
  scale_cost_table(table, 2.0);
  EXPECT_DOUBLE_EQ(table.busy_level(), 1.25);
  EXPECT_DOUBLE_EQ(table.busy_seconds(0, 1), 7.5);
  // A busy run slower than alone is what a plan's workers pay: kept as measured.
  table.busy_run_seconds = 2.0 * 7.2;
  EXPECT_DOUBLE_EQ(table.busy_level(), 1.0);
  EXPECT_DOUBLE_EQ(table.busy_seconds(0, 1), 6.0);
  // A table without its runs (tests, older tables) keeps its busy times.
  table.busy_run_seconds = 0;
  EXPECT_DOUBLE_EQ(table.busy_level(), 1.0);
  table.busy_run_seconds = 1.0;
  table.run_seconds.clear();
  EXPECT_DOUBLE_EQ(table.busy_level(), 1.0);
}

TEST(BusySeconds, TheTaskGraphCarriesThemAtEachDevicesThreadsAndNoneWithoutThem) {
  const Graph graph = with_weights(kBranches);
  CostTable table;
  table.source = "profile";
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) table.nodes[id].seconds = {2.0, 1.0};
  const TaskGraph alone = task_graph_for(graph, table, cpu_workers(2, 2));
  for (const Task& task : alone.tasks) EXPECT_TRUE(task.busy_time.empty()) << task.name;
  for (NodeId id : graph.node_ids()) table.nodes[id].busy_seconds = 5.0;
  const TaskGraph busy = task_graph_for(graph, table, cpu_workers(2, 2));
  for (const Task& task : busy.tasks)
    EXPECT_EQ(task.busy_time, (std::vector<double>{2.5, 2.5})) << task.name;
}

NodeId node_named(const Graph& graph, const std::string& op_type) {
  for (NodeId id : graph.node_ids()) {
    if (graph.node(id).op_type == op_type) return id;
  }
  throw Error("no " + op_type + " node");
}

TEST(AnalyticalTaskGraph, ADeviceWithARooflineGetsItsOwnTimeAndOthersScaleByTheirSpeed) {
  const Graph graph = with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,8,16,16]) {
  @w: f32[8,8,3,3]
  %a: f32[1,8,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %b: f32[1,8,16,16] = Relu(%x)
  %y: f32[1,8,16,16] = Add(%a, %b)
  return %y
}
)");
  PeakRates rates;
  rates.flops_per_second = {1e10};
  rates.bytes_per_second = 1e10;
  rates.seconds_per_op = 1e-6;
  const CostTable costs = analytical_costs(graph, rates);
  Machine machine;
  machine.devices.resize(2);
  machine.devices[0].name = "cpu";
  machine.devices[0].speed = 2;
  machine.devices[1].name = "gpu";
  machine.devices[1].roofline = {1e9, 1e8, 1e-5};
  machine.bandwidth = {{0, 1e9}, {1e9, 0}};
  machine.latency = {{0, 0}, {0, 0}};
  const TaskGraph tasks = task_graph_for(graph, costs, machine);
  const NodeId conv = node_named(graph, "Conv");
  const NodeId relu = node_named(graph, "Relu");
  for (const Task& task : tasks.tasks) {
    EXPECT_DOUBLE_EQ(task.time[0], costs.seconds(task.node) / 2) << task.name;
    if (task.node == conv) {
      // Compute-bound there: 2 * 8 * 8 * 9 * 16 * 16 flops at 1e9/s beat 18688 bytes at 1e8/s.
      EXPECT_EQ(costs.nodes[conv].flops, 294912);
      EXPECT_DOUBLE_EQ(task.time[1], 1e-5 + 294912 / 1e9);
    }
    if (task.node == relu) {
      // Memory-bound: 8 KiB read and 8 KiB written at 1e8 bytes/s.
      EXPECT_DOUBLE_EQ(task.time[1], 1e-5 + 16384 / 1e8);
    }
  }
  // Static and measured costs are times on this CPU: a roofline does not apply to them.
  const TaskGraph by_speed = task_graph_for(graph, static_costs(graph), machine);
  for (const Task& task : by_speed.tasks) {
    EXPECT_DOUBLE_EQ(task.time[1], static_costs(graph).seconds(task.node));
  }
}

}  // namespace
}  // namespace cleave
