// `mpirun -np N cleave run MODEL --plan P`: outputs equal the single-process run, a stream of
// samples, and every refusal and failure stopping all ranks with a message naming the rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../busy_processes.h"
#include "../cli/command_fixture.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

class MpiRunTest : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    ASSERT_EQ(
        cleave("gen inception --blocks 2 --size 32 --seed 1 -o " + path("model.onnx")).exit_code,
        0);
  }

  // A plan of `workers` workers by `strategy`, from static costs (no profiling in tests).
  std::string plan(const std::string& strategy, int workers) {
    std::string file = path(strategy + std::to_string(workers) + ".json");
    CommandResult made = cleave("plan " + path("model.onnx") + " --costs static --strategy " +
                                strategy + " --workers " + std::to_string(workers) + " -o " + file);
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return file;
  }

  // The bytes of every .npy output in `folder`, by file name.
  std::map<std::string, std::vector<std::byte>> outputs_in(const std::string& folder) const {
    std::map<std::string, std::vector<std::byte>> result;
    for (const auto& entry : std::filesystem::directory_iterator(path(folder))) {
      Tensor tensor = read_npy(entry.path().string());
      const auto* bytes = static_cast<const std::byte*>(tensor.raw());
      result[entry.path().filename().string()] = {bytes, bytes + tensor.byte_size()};
    }
    return result;
  }

  void expect_equal_to_single_process(const std::string& plan_file, int ranks) {
    const std::string common = " --layouts blocked --seed 4 ";
    CommandResult single =
        cleave("run " + path("model.onnx") + common + "--output-dir " + path("single"));
    ASSERT_EQ(single.exit_code, 0) << single.err;
    CommandResult distributed = mpirun(ranks, "run " + path("model.onnx") + " --plan " + plan_file +
                                                  common + "--json --output-dir " + path("ranks"));
    ASSERT_EQ(distributed.exit_code, 0) << distributed.err << distributed.out;
    nlohmann::json report = nlohmann::json::parse(distributed.out);
    EXPECT_EQ(report["ranks"], ranks);
    ASSERT_EQ(report["per_rank"].size(), static_cast<std::size_t>(ranks));
    // Some value crossed ranks, so the run really was distributed.
    double sent = 0;
    for (const auto& entry : report["per_rank"]) sent += entry["bytes_sent"].get<double>();
    EXPECT_GT(sent, 0);
    auto expected = outputs_in("single");
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(outputs_in("ranks"), expected);
  }
};

TEST_F(MpiRunTest, TwoRanksOfAnLcPlanEqualTheSingleProcessRunBitwise) {
  expect_equal_to_single_process(plan("lc", 2), 2);
}

TEST_F(MpiRunTest, ThreeRanksOfAHeftPlanEqualTheSingleProcessRunBitwise) {
  expect_equal_to_single_process(plan("heft", 3), 3);
}

// Ranks hold only their own weights, so none can time the model's convolutions; under the
// default --layouts auto they run the family the plan's costs were profiled in.
TEST_F(MpiRunTest, RanksRunTheConvolutionFamilyThePlanWasCostedIn) {
  const std::string file = plan("lc", 2);
  nlohmann::json edited = nlohmann::json::parse(read_text(file));
  EXPECT_FALSE(edited.contains("convolution_family")) << "static costs time no kernels";
  edited["convolution_family"] = "channels-last";
  std::ofstream(path("channels_last.json")) << edited.dump();
  CommandResult single = cleave("run " + path("model.onnx") +
                                " --layouts channels-last --seed 4 --output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks =
      mpirun(2, "run " + path("model.onnx") + " --plan " + path("channels_last.json") +
                    " --seed 4 --json --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  nlohmann::json report = nlohmann::json::parse(ranks.out);
  EXPECT_EQ(report["layouts"]["family"], "channels-last");
  EXPECT_EQ(report["layouts"]["from"], "plan");
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
  // An explicit --layouts still wins over the plan's.
  CommandResult asked = mpirun(2, "run " + path("model.onnx") + " --plan " +
                                      path("channels_last.json") + " --layouts blocked --json");
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_EQ(nlohmann::json::parse(asked.out)["layouts"]["family"], "blocked");
}

// Pipelined stages on ranks: `cleave plan --strategy pipeline --machine` cuts the model into a
// stage per rank for a stream of samples, and the MPI executor runs it as any plan: every
// sample's outputs are the single process's, and both ranks work.
TEST_F(MpiRunTest, PipelinedStagesOnTwoRanksEqualTheSingleProcessRun) {
  std::ofstream(path("two.json")) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e9], [1e9, 0]], "latency": [[0, 1e-4], [1e-4, 0]]})";
  CommandResult made =
      cleave("plan " + path("model.onnx") + " --costs static --strategy pipeline --machine " +
             path("two.json") + " --samples 4 --json -o " + path("stages.json"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const nlohmann::json plan = nlohmann::json::parse(made.out);
  EXPECT_EQ(plan["family"], "pipeline");
  EXPECT_EQ(plan["configuration"], "2 stages, one per device");
  const std::string common = " --layouts blocked --seed 4 ";
  CommandResult single =
      cleave("run " + path("model.onnx") + common + "--output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks = mpirun(2, "run " + path("model.onnx") + " --plan " + path("stages.json") +
                                      common + "--samples 4 --json --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err << ranks.out;
  nlohmann::json report = nlohmann::json::parse(ranks.out);
  EXPECT_EQ(report["samples"], 4);
  EXPECT_EQ(report["plan"]["samples_per_run"], 4);
  for (const auto& rank : report["per_rank"]) EXPECT_GT(rank["tasks"].get<double>(), 0) << rank;
  EXPECT_GT(report["per_rank"][0]["bytes_sent"].get<double>(), 0);
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
}

TEST_F(MpiRunTest, PipelineStrategyWithoutAMachineOrOnOneDeviceIsRefused) {
  CommandResult threads =
      cleave("plan " + path("model.onnx") + " --costs static --strategy pipeline --samples 4");
  EXPECT_NE(threads.exit_code, 0);
  EXPECT_NE(threads.err.find("cleave run --plan pipeline"), std::string::npos) << threads.err;
  std::ofstream(path("one.json")) << R"({"devices": [{"name": "rank0"}]})";
  CommandResult one = cleave("plan " + path("model.onnx") +
                             " --costs static --strategy pipeline --samples 4 --machine " +
                             path("one.json") + " -o " + path("p.json"));
  EXPECT_NE(one.exit_code, 0);
  EXPECT_NE(one.err.find("pipeline: needs a machine of two devices or more"), std::string::npos)
      << one.err;
  EXPECT_FALSE(std::filesystem::exists(path("p.json")));
}

TEST_F(MpiRunTest, StreamOfSamplesReportsThroughputAndLatencyPerSample) {
  CommandResult result =
      mpirun(2, "run " + path("model.onnx") + " --plan " + plan("lc", 2) +
                    " --layouts blocked --samples 6 --json --trace " + path("trace.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["samples"], 6);
  EXPECT_GT(report["throughput_samples_per_s"].get<double>(), 0);
  ASSERT_EQ(report["sample_latency_ms"]["per_sample"].size(), 6u);
  for (const auto& ms : report["sample_latency_ms"]["per_sample"]) EXPECT_GT(ms.get<double>(), 0);
  // The trace has one row per rank and one event per task and sample.
  nlohmann::json trace = nlohmann::json::parse(read_text(path("trace.json")));
  double tasks = 0;
  for (const auto& rank : report["per_rank"]) tasks += rank["tasks"].get<double>();
  std::size_t events = 0;
  for (const auto& event : trace["traceEvents"]) events += event["ph"] == "X";
  EXPECT_EQ(events, static_cast<std::size_t>(tasks) * 6);
}

// Every rank's trace on one clock: a task that reads a value from the other rank starts after
// that value's producer ended there (each rank's trace had counted from its own start).
TEST_F(MpiRunTest, TheMergedTraceIsOnOneClock) {
  const std::string plan_file = plan("lc", 2);
  CommandResult result =
      mpirun(2, "run " + path("model.onnx") + " --plan " + plan_file +
                    " --layouts blocked --warmup 1 --repeat 1 --trace " + path("one_clock.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json planned = nlohmann::json::parse(read_text(plan_file));
  const nlohmann::json trace = nlohmann::json::parse(read_text(path("one_clock.json")));
  std::map<std::string, std::pair<double, double>> slices;  // task: start, end (us)
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    const double start = event["ts"].get<double>();
    EXPECT_GE(start, 0) << event;
    slices[event["name"].get<std::string>()] = {start, start + event["dur"].get<double>()};
  }
  int crossing = 0;
  for (const auto& transfer : planned["transfers"]) {
    const std::string from = transfer["from_task"], to = transfer["to_task"];
    ASSERT_TRUE(slices.count(from) && slices.count(to)) << from << " -> " << to;
    EXPECT_GE(slices[to].first, slices[from].second) << from << " -> " << to;
    ++crossing;
  }
  EXPECT_GT(crossing, 0) << "the plan sends nothing between the ranks";
}

// With every core held by another process, a host's ranks run one intra-op thread each and
// say so; --fixed-threads keeps the two asked for.
TEST_F(MpiRunTest, RanksShareTheCoresOtherProcessesLeaveFree) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  unsetenv("CLEAVE_FIXED_THREADS");
  const std::string run = "run " + path("model.onnx") + " --plan " + plan("lc", 2) +
                          " --layouts blocked --threads-per-worker 2";
  BusyProcesses busy(cores + 1);
  CommandResult adapted = mpirun(2, run + " --json");
  ASSERT_EQ(adapted.exit_code, 0) << adapted.err;
  nlohmann::json report = nlohmann::json::parse(adapted.out);
  EXPECT_EQ(report["threads_per_rank"], 1) << adapted.out;
  EXPECT_EQ(report["threads_requested"], 2);
  for (const auto& rank : report["per_rank"]) {
    EXPECT_EQ(rank["threads"], 1) << rank;
    EXPECT_GE(rank["host_other_runnable"].get<double>(), static_cast<double>(cores));
  }
  CommandResult text = mpirun(2, run);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1 per rank on rank 0 (asked for 2;"), std::string::npos) << text.out;

  CommandResult fixed = mpirun(2, run + " --fixed-threads --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  report = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(report["threads_per_rank"], 2);
  for (const auto& rank : report["per_rank"]) EXPECT_EQ(rank["threads"], 2) << rank;
}

TEST_F(MpiRunTest, WorkerCountOtherThanRanksIsRefusedOnEveryRank) {
  CommandResult result = mpirun(
      3, "run " + path("model.onnx") + " --plan " + plan("lc", 2) + " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  // Each of the three ranks says so.
  std::size_t count = 0;
  for (std::size_t at = result.err.find("but 3 ranks were started"); at != std::string::npos;
       at = result.err.find("but 3 ranks were started", at + 1))
    ++count;
  EXPECT_EQ(count, 3u) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(MpiRunTest, PlanOfAnotherModelIsRefusedBeforeAnyWork) {
  const std::string plan_file = plan("lc", 2);
  ASSERT_EQ(
      cleave("gen inception --blocks 2 --size 32 --seed 2 -o " + path("other.onnx")).exit_code, 0);
  CommandResult result = mpirun(
      2, "run " + path("other.onnx") + " --plan " + plan_file + " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("made for another model"), std::string::npos) << result.err;
  // Both ranks refuse: rank 1 for its own reason or, reported first, rank 0's.
  EXPECT_NE(result.err.find("cleave: error: rank 0 refused to start: "), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("rank 0 refused to start, so rank 1 stops too"), std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

// Two ranks whose links cost next to nothing.
constexpr const char* kFastLinks = R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e12], [1e12, 0]], "latency": [[0, 1e-7], [1e-7, 0]]})";

// A Concat whose inputs are all made on its own rank is written in place there, as in one
// process (here every task on rank 0); the outputs stay bit-identical.
TEST_F(MpiRunTest, ConcatInputsMadeOnTheConcatsRankAreWrittenInPlace) {
  std::ofstream(path("fast.json")) << kFastLinks;
  const std::string file = path("sequential.json");
  CommandResult made = cleave("plan " + path("model.onnx") + " --costs static --strategy " +
                              "sequential --machine " + path("fast.json") + " -o " + file);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string common = " --layouts blocked --seed 4 ";
  CommandResult single =
      cleave("run " + path("model.onnx") + common + "--output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks = mpirun(2, "run " + path("model.onnx") + " --plan " + file + common +
                                      "--json --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  const nlohmann::json per_rank = nlohmann::json::parse(ranks.out)["per_rank"];
  ASSERT_EQ(per_rank.size(), 2u);
  EXPECT_GT(per_rank[0]["concat_inputs_in_place"].get<double>(), 0) << per_rank.dump();
  EXPECT_EQ(per_rank[1]["tasks"].get<double>(), 0);
  EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
}

// `--plan auto` under mpirun: rank 0 plans for the ranks, and the ranks time auto's choice,
// the runner-up of another family and all on rank 0 alike, then run the fastest.
TEST_F(MpiRunTest, AutoTimesItsCandidatesOnTheRanksAndKeepsOne) {
  // Links fast enough that auto predicts the Inception branches on both ranks.
  std::ofstream(path("fast.json")) << kFastLinks;
  const std::string common = " --layouts blocked --seed 4 ";
  CommandResult single =
      cleave("run " + path("model.onnx") + common + "--output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks = mpirun(2, "run " + path("model.onnx") + " --plan auto --machine " +
                                      path("fast.json") + " --costs static" + common +
                                      "--repeat 2 --json --verbose --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err << ranks.out;
  const nlohmann::json report = nlohmann::json::parse(ranks.out);
  EXPECT_EQ(report["ranks"], 2);
  EXPECT_EQ(report["plan"]["file"], "auto");
  ASSERT_TRUE(report["plan"].contains("auto_check")) << report["plan"];
  const nlohmann::json& check = report["plan"]["auto_check"];
  // Three timed candidates, each measured.
  for (const char* ms : {"candidate_ms", "runner_up_ms", "sequential_ms"})
    EXPECT_GT(check[ms].get<double>(), 0) << ms << " " << check;
  const std::string candidate = check["candidate"];
  EXPECT_NE(candidate, "sequential") << "two Inception blocks: a parallel choice";
  const std::string kept = check["kept_configuration"];
  double kept_ms = 0;
  if (kept == check["candidate_configuration"]) {
    kept_ms = check["candidate_ms"];
  } else if (kept == check["runner_up"]) {
    kept_ms = check["runner_up_ms"];
  } else {
    ASSERT_EQ(kept, "sequential") << check;
    kept_ms = check["sequential_ms"];
  }
  // The fastest median is kept.
  for (const char* ms : {"candidate_ms", "runner_up_ms", "sequential_ms"})
    EXPECT_LE(kept_ms, check[ms].get<double>()) << check;
  // What runs is what was kept.
  EXPECT_EQ(report["plan"]["strategy"], check["kept"]);
  if (kept != "sequential") {
    EXPECT_EQ(report["plan"]["configuration"], kept);
  }
  EXPECT_FALSE(report["plan"]["candidates"].empty());
  EXPECT_EQ(report["latency_ms"]["runs"].size(), 2u);
  EXPECT_NE(ranks.err.find("ranks: auto's choice"), std::string::npos) << ranks.err;
  EXPECT_NE(ranks.err.find("ranks: timed "), std::string::npos) << ranks.err;
  // Whichever was kept, the outputs are the single process's.
  auto expected = outputs_in("single");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(outputs_in("ranks"), expected);

  CommandResult text = mpirun(2, "run " + path("model.onnx") + " --plan auto --machine " +
                                     path("fast.json") + " --costs static" + common);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\ncheck      timed "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("against sequential at "), std::string::npos) << text.out;
}

// Without a machine file the ranks are equal devices linked as a split's messages are priced:
// there every task planner puts this small model on rank 0, so no other task plan runs
// otherwise; the spatial split is predicted faster (3.6 ms against 4.5 on static costs), so it
// alone is timed beside it. The run is still the single process's.
TEST_F(MpiRunTest, AutoWithoutAMachineFilePlansTheRanksAsEqualDevices) {
  const std::string common = " --layouts blocked --seed 4 ";
  CommandResult single =
      cleave("run " + path("model.onnx") + common + "--output-dir " + path("single"));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  CommandResult ranks = mpirun(2, "run " + path("model.onnx") + " --plan auto --costs static" +
                                      common + "--json --verbose --output-dir " + path("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  const nlohmann::json report = nlohmann::json::parse(ranks.out);
  EXPECT_EQ(report["ranks"], 2);
  EXPECT_NE(ranks.err.find("ranks: auto predicts lc, 2 devices"), std::string::npos) << ranks.err;
  EXPECT_NE(ranks.err.find("ranks: no runner-up"), std::string::npos) << ranks.err;
  ASSERT_TRUE(report["plan"].contains("auto_check")) << report["plan"];
  const nlohmann::json& check = report["plan"]["auto_check"];
  EXPECT_EQ(check["candidate_configuration"], "all on device 0 'cpu0'");
  EXPECT_FALSE(check.contains("runner_up")) << check;
  ASSERT_TRUE(check.contains("split")) << check;
  if (check["kept"] == "sequential") {
    EXPECT_EQ(report["plan"]["family"], "sequential");
    EXPECT_EQ(report["plan"]["configuration"], "all on device 0 'cpu0'");
    EXPECT_EQ(outputs_in("ranks"), outputs_in("single"));
  } else {  // The split, whose sums may run in another order.
    EXPECT_EQ(report["plan"]["family"], "spatial");
    const auto got = outputs_in("ranks"), want = outputs_in("single");
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, bytes] : want) {
      ASSERT_EQ(got.at(name).size(), bytes.size()) << name;
      const auto* a = reinterpret_cast<const float*>(got.at(name).data());
      const auto* b = reinterpret_cast<const float*>(bytes.data());
      for (std::size_t i = 0; i < bytes.size() / sizeof(float); ++i)
        EXPECT_NEAR(a[i], b[i], 1e-4) << name << " " << i;
    }
  }
}

TEST_F(MpiRunTest, AutoOnAMachineFileWithoutTheCheckRunsItsPrediction) {
  std::ofstream(path("two.json")) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e9], [1e9, 0]], "latency": [[0, 1e-4], [1e-4, 0]]})";
  CommandResult made = cleave("plan " + path("model.onnx") + " --costs static --machine " +
                              path("two.json") + " --json");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  CommandResult ranks = mpirun(2, "run " + path("model.onnx") + " --plan auto --machine " +
                                      path("two.json") + " --costs static --no-auto-check --json");
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  const nlohmann::json report = nlohmann::json::parse(ranks.out);
  EXPECT_FALSE(report["plan"].contains("auto_check"));
  EXPECT_EQ(report["plan"]["configuration"], nlohmann::json::parse(made.out)["configuration"]);
}

TEST_F(MpiRunTest, AutoOnAMachineFileOfAnotherDeviceCountIsRefusedOnEveryRank) {
  std::ofstream(path("three.json")) << R"({"devices": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    "bandwidth": [[0, 1e9, 1e9], [1e9, 0, 1e9], [1e9, 1e9, 0]],
    "latency": [[0, 1e-4, 1e-4], [1e-4, 0, 1e-4], [1e-4, 1e-4, 0]]})";
  CommandResult result =
      mpirun(2, "run " + path("model.onnx") + " --plan auto --machine " + path("three.json") +
                    " --costs static --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  const std::string message = "the machine file names 3 device(s), but 2 ranks were started";
  EXPECT_NE(result.err.find("cleave: error: rank 0 refused to start: " + path("three.json") + ": " +
                            message),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("rank 0 refused to start, so rank 1 stops too: " + path("three.json") +
                            ": " + message),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
  // A plan file with --machine is refused too (the machine is auto's).
  CommandResult file = mpirun(2, "run " + path("model.onnx") + " --plan " + plan("lc", 2) +
                                     " --machine " + path("three.json"));
  EXPECT_NE(file.exit_code, 0);
  EXPECT_NE(file.err.find("--machine: needs --plan auto"), std::string::npos) << file.err;
}

// An emulated half-speed rank (CLEAVE_EMULATED_SPEEDS) pauses after its tasks, and only it;
// the outputs are the full-speed run's.
TEST_F(MpiRunTest, EmulatedHalfSpeedRankPausesAndComputesTheSameOutputs) {
  const std::string file = plan("lc", 2);
  const std::string common = " --plan " + file + " --layouts blocked --seed 4 --json ";
  CommandResult full =
      mpirun(2, "run " + path("model.onnx") + common + "--output-dir " + path("full"));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  CommandResult half =
      mpirun(2, "run " + path("model.onnx") + common + "--output-dir " + path("half"),
             "-x CLEAVE_EMULATED_SPEEDS=1,0.5");
  ASSERT_EQ(half.exit_code, 0) << half.err;
  const nlohmann::json ranks = nlohmann::json::parse(half.out)["per_rank"];
  ASSERT_EQ(ranks.size(), 2u);
  ASSERT_GT(ranks[1]["tasks"].get<double>(), 0) << "the lc plan gives rank 1 no task";
  EXPECT_EQ(ranks[0]["emulated_speed"].get<double>(), 1.0);
  EXPECT_EQ(ranks[0]["emulated_pause_ms_per_run"].get<double>(), 0.0);
  EXPECT_EQ(ranks[1]["emulated_speed"].get<double>(), 0.5);
  EXPECT_GT(ranks[1]["emulated_pause_ms_per_run"].get<double>(), 0.0);
  const nlohmann::json unpaced = nlohmann::json::parse(full.out)["per_rank"];
  EXPECT_EQ(unpaced[1]["emulated_pause_ms_per_run"].get<double>(), 0.0);
  EXPECT_EQ(outputs_in("half"), outputs_in("full"));
}

TEST_F(MpiRunTest, MalformedEmulatedSpeedsStopEveryRankWithoutOutputs) {
  CommandResult result = mpirun(
      2, "run " + path("model.onnx") + " --plan " + plan("lc", 2) + " --output-dir " + path("out"),
      "-x CLEAVE_EMULATED_SPEEDS=1,0");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("CLEAVE_EMULATED_SPEEDS '1,0': rank 1's speed"), std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

class MpiFaultTest : public MpiRunTest {
 protected:
  CommandResult run_with_fault(const std::string& fault, double& seconds) {
    auto start = std::chrono::steady_clock::now();
    CommandResult result = mpirun(2,
                                  "run " + path("model.onnx") + " --plan " + plan("lc", 2) +
                                      " --rank-timeout 3 --samples 4 --output-dir " + path("out"),
                                  "-x CLEAVE_FAULT=" + fault);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }
};

TEST_F(MpiFaultTest, StoppedRankStopsEveryRankWithinTheTimeout) {
  double seconds = 0;
  CommandResult result = run_with_fault("rank=1,run=1,task=1,action=stop", seconds);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(seconds, 30);
  EXPECT_NE(result.err.find("rank 0: waited more than 3 s for"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("from rank 1"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(MpiFaultTest, KilledRankStopsEveryRank) {
  double seconds = 0;
  CommandResult result = run_with_fault("rank=1,run=1,task=1,action=kill", seconds);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(seconds, 30);
  EXPECT_NE(result.err.find("rank 1"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(MpiFaultTest, MessageOfWrongTypeIsRefused) {
  double seconds = 0;
  CommandResult result = run_with_fault("rank=1,run=0,action=bad-dtype", seconds);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("refused the message for value"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("its type is i32, the plan says f32"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(MpiFaultTest, MessageOfWrongSizeIsRefused) {
  double seconds = 0;
  CommandResult result = run_with_fault("rank=1,run=0,action=short", seconds);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("refused the message for value"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

// A rank that stops during auto's timed check stops every rank within the rank timeout.
TEST_F(MpiFaultTest, RankStoppedDuringAutosCheckStopsEveryRank) {
  std::ofstream(path("fast.json")) << kFastLinks;
  const auto start = std::chrono::steady_clock::now();
  CommandResult result =
      mpirun(2,
             "run " + path("model.onnx") + " --plan auto --machine " + path("fast.json") +
                 " --costs static --rank-timeout 3 --output-dir " + path("out"),
             "-x CLEAVE_FAULT=rank=1,run=0,task=0,action=stop");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(seconds, 60);
  EXPECT_NE(result.err.find("rank 0: waited more than 3 s for"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

}  // namespace
}  // namespace cleave
