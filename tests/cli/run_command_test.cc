// `cleave run`: the measured layout choice and its cache, the family behind `--plan auto`'s
// prediction, auto's timed check against the sequential plan, and refusing unknown values.
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../busy_processes.h"
#include "command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class RunCommandTest : public DemoModelFixture {};

TEST_F(RunCommandTest, AutoLayoutsAreMeasuredOnceThenReadFromTheCache) {
  CommandResult first = cleave("run " + model_ + " --json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  nlohmann::json report = nlohmann::json::parse(first.out);
  EXPECT_TRUE(report["layouts"]["measured"].get<bool>());
  EXPECT_FALSE(report["layouts"]["cached"].get<bool>());
  EXPECT_GT(report["layouts"]["fastest_ms"]["blocked"].get<double>(), 0);
  EXPECT_GT(report["layouts"]["fastest_ms"]["channels-last"].get<double>(), 0);
  EXPECT_EQ(report["layouts"]["relative_to_blocked"]["blocked"].get<double>(), 1.0);
  EXPECT_GT(report["layouts"]["relative_to_blocked"]["channels-last"].get<double>(), 0);
  ASSERT_TRUE(fs::exists(path("cache/layouts")));
  EXPECT_EQ(std::distance(fs::directory_iterator(path("cache/layouts")), fs::directory_iterator()),
            1);

  CommandResult second = cleave("run " + model_);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("layouts    "), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("(measured earlier: "), std::string::npos) << second.out;
}

TEST_F(RunCommandTest, AFixedFamilyIsNotMeasured) {
  for (std::string family : {"channels-last", "winograd", "blocked"}) {
    CommandResult result = cleave("run " + model_ + " --layouts " + family + " --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    nlohmann::json report = nlohmann::json::parse(result.out);
    EXPECT_EQ(report["layouts"]["family"], family);
    EXPECT_FALSE(report["layouts"]["measured"].get<bool>());
    EXPECT_FALSE(fs::exists(path("cache/layouts")));
  }
}

// `--plan auto` profiles with the family chosen for one thread per worker. When it picks one
// worker with all threads, whose measured family differs, the prediction must come from a
// profile of the family that runs. The cached profile is set so that one worker with both
// threads wins, and the cached choice for two threads so that its family differs.
TEST_F(RunCommandTest, AutoPredictsAOneWorkerPlanWithTheFamilyItRuns) {
  ASSERT_EQ(cleave("gen rwnn --modules 4 --nodes 2 --p 1 --channels 32 --size 28 -o " +
                   path("chain.onnx"))
                .exit_code,
            0);
  const std::string run = "run " + path("chain.onnx") + " --plan auto --workers 2 --json";
  CommandResult first = cleave(run);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // The report says where the profile behind the prediction came from: measured by this run.
  EXPECT_EQ(nlohmann::json::parse(first.out)["plan"]["profile_cache"]["outcome"], "measured")
      << first.out;
  const auto cached = [&](const std::string& kind, const std::string& part) {
    for (const auto& entry : fs::directory_iterator(path("cache/" + kind))) {
      if (entry.path().filename().string().find(part) != std::string::npos) return entry.path();
    }
    return fs::path();
  };
  const fs::path one_thread = cached("layouts", "-t1-");
  ASSERT_FALSE(one_thread.empty());
  nlohmann::json choice = nlohmann::json::parse(read_text(one_thread));
  const std::string profiled = choice["family"];
  const std::string other = profiled == "blocked" ? "channels-last" : "blocked";
  choice["family"] = other;
  choice["threads"] = 2;
  std::string two_threads = one_thread.filename().string();
  two_threads.replace(two_threads.find("-t1-"), 4, "-t2-");
  std::ofstream(one_thread.parent_path() / two_threads) << choice.dump();
  const fs::path profile = cached("profiles", "-" + profiled + "-v");
  ASSERT_FALSE(profile.empty());
  nlohmann::json costs = nlohmann::json::parse(read_text(profile));
  for (auto& node : costs["nodes"]) node["seconds"][1] = node["seconds"][0].get<double>() / 2;
  std::ofstream(profile) << costs.dump();

  CommandResult second = cleave(run);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const nlohmann::json report = nlohmann::json::parse(second.out);
  ASSERT_EQ(report["plan"]["threads_per_worker"], 2) << second.out;
  EXPECT_EQ(report["layouts"]["family"], other);
  EXPECT_EQ(report["plan"]["predicted_with_layouts"], other);
  EXPECT_FALSE(cached("profiles", "-" + other + "-v").empty());
}

// Static weights favour a parallel plan for the demo's Inception blocks; before running it,
// `auto` times it against the sequential plan and keeps the faster.
TEST_F(RunCommandTest, AutoTimesAParallelChoiceAgainstSequential) {
  const std::string run = "run " + model_ + " --plan auto --costs static --workers 2 --json";
  CommandResult checked = cleave(run);
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  const nlohmann::json report = nlohmann::json::parse(checked.out);
  ASSERT_TRUE(report["plan"].contains("auto_check")) << checked.out;
  const nlohmann::json& check = report["plan"]["auto_check"];
  EXPECT_NE(check["candidate"], "sequential");
  EXPECT_GT(check["candidate_ms"].get<double>(), 0);
  EXPECT_GT(check["sequential_ms"].get<double>(), 0);
  // The fastest measured of the choice, the runner-up (when timed) and sequential is kept.
  const double candidate_ms = check["candidate_ms"].get<double>();
  const double runner_up_ms = check.value("runner_up_ms", candidate_ms);
  const double sequential_ms = check["sequential_ms"].get<double>();
  const bool sequential_faster = sequential_ms < std::min(candidate_ms, runner_up_ms);
  if (sequential_faster) {
    EXPECT_EQ(check["kept"], "sequential");
  } else if (runner_up_ms < candidate_ms) {
    EXPECT_EQ(check["kept_configuration"], check["runner_up"]);
  } else {
    EXPECT_EQ(check["kept"], check["candidate"]);
  }
  EXPECT_EQ(report["plan"]["strategy"], check["kept"]);
  EXPECT_EQ(report["plan"]["workers"], sequential_faster ? 1 : 2);

  CommandResult unchecked = cleave(run + " --no-auto-check");
  ASSERT_EQ(unchecked.exit_code, 0) << unchecked.err;
  const nlohmann::json plain = nlohmann::json::parse(unchecked.out);
  EXPECT_FALSE(plain["plan"].contains("auto_check"));
  EXPECT_EQ(plain["plan"]["strategy"], check["candidate"]);
}

// --stats names the implementation of every node, grouped by op; the demo model's convolutions
// run oneDNN kernels, never its reference ones, on whatever ISA the machine has.
TEST_F(RunCommandTest, StatsListEachOpsImplementations) {
  CommandResult result = cleave("run " + model_ + " --layouts blocked --stats --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json report = nlohmann::json::parse(result.out);
  ASSERT_TRUE(report.contains("implementations")) << result.out;
  int conv_nodes = 0, all_nodes = 0;
  for (const auto& entry : report["implementations"]) {
    all_nodes += entry["nodes"].get<int>();
    if (entry["op"] != "Conv") continue;
    conv_nodes += entry["nodes"].get<int>();
    const std::string name = entry["implementation"].get<std::string>();
    EXPECT_EQ(name.find("ref"), std::string::npos) << name;
    EXPECT_NE(name, "cleave");
  }
  EXPECT_GT(conv_nodes, 0);
  int op_nodes = 0;
  for (const auto& entry : report["ops"]) op_nodes += entry["nodes"].get<int>();
  EXPECT_EQ(all_nodes, op_nodes);
}

// With every core held by another process, a run asked for 2 threads takes 1, with the 2
// claiming its convolutions' parts, and says why; --fixed-threads keeps 2. (The test binaries set
// CLEAVE_FIXED_THREADS for the commands they start, test_environment.cc; these runs go without it.)
TEST_F(RunCommandTest, TakesOnlyTheCoresOtherProcessesLeaveFree) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  BusyProcesses busy(cores + 1);
  const std::string run = "env -u CLEAVE_FIXED_THREADS " + std::string(CLEAVE_BINARY) + " run " +
                          model_ + " --threads 2 --layouts blocked";
  CommandResult adapted = run_shell(run + " --json");
  ASSERT_EQ(adapted.exit_code, 0) << adapted.err;
  nlohmann::json report = nlohmann::json::parse(adapted.out);
  EXPECT_EQ(report["threads"], 1) << adapted.out;
  EXPECT_EQ(report["threads_requested"], 2);
  EXPECT_EQ(report["convolution_claim_threads"], 2);
  EXPECT_GE(report["host_load"]["other_runnable"].get<int>(), cores);

  CommandResult text = run_shell(run);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1 thread(s), convolutions in parts claimed by 2 (asked for 2;"),
            std::string::npos)
      << text.out;

  CommandResult fixed = run_shell(run + " --fixed-threads --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  report = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(report["threads"], 2);
  EXPECT_FALSE(report.contains("threads_requested"));
  EXPECT_FALSE(report.contains("convolution_claim_threads"));
}

// A plan's two workers, with every core held by another process, run folded onto one thread
// and say so; --fixed-threads keeps the plan's two.
TEST_F(RunCommandTest, APlansWorkersTakeOnlyTheCoresOtherProcessesLeaveFree) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  ASSERT_EQ(cleave("plan " + model_ + " --strategy lc --workers 2 -o " + path("lc.json")).exit_code,
            0);
  BusyProcesses busy(cores + 1);
  const std::string run = "env -u CLEAVE_FIXED_THREADS " + std::string(CLEAVE_BINARY) + " run " +
                          model_ + " --layouts blocked --plan " + path("lc.json");
  CommandResult adapted = run_shell(run + " --json");
  ASSERT_EQ(adapted.exit_code, 0) << adapted.err;
  nlohmann::json report = nlohmann::json::parse(adapted.out);
  EXPECT_EQ(report["plan"]["workers"], 2) << adapted.out;
  EXPECT_EQ(report["plan"]["threads"], 1);
  EXPECT_EQ(report["plan"]["ran_threads_per_worker"], 1);
  EXPECT_GE(report["host_load"]["other_runnable"].get<int>(), cores);

  CommandResult text = run_shell(run);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2 worker(s) x 1 thread(s) on 1 thread(s) x 1 ("), std::string::npos)
      << text.out;

  CommandResult fixed = run_shell(run + " --fixed-threads --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  report = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(report["plan"]["threads"], 2);
  EXPECT_FALSE(report.contains("host_load"));
}

// A run frees the loaded weights its kernels keep packed, with or without a plan, and both give
// the same output bytes (release_weights_test compares with executors that keep them).
TEST_F(RunCommandTest, ARunFreesTheWeightsItsKernelsKeepPacked) {
  ASSERT_EQ(cleave("plan " + model_ + " --strategy lc --workers 2 -o " + path("lc.json")).exit_code,
            0);
  CommandResult sequential = cleave("run " + model_ + " --layouts blocked --repeat 2 --json " +
                                    "--output-dir " + path("sequential"));
  ASSERT_EQ(sequential.exit_code, 0) << sequential.err;
  EXPECT_GT(nlohmann::json::parse(sequential.out)["released_weight_bytes"].get<double>(), 0);
  CommandResult planned = cleave("run " + model_ + " --layouts blocked --repeat 2 --json " +
                                 "--output-dir " + path("planned") + " --plan " + path("lc.json"));
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_GT(nlohmann::json::parse(planned.out)["released_weight_bytes"].get<double>(), 0);
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(path("sequential"))) {
    std::ifstream a(entry.path(), std::ios::binary);
    std::ifstream b(path("planned") + "/" + entry.path().filename().string(), std::ios::binary);
    ASSERT_TRUE(b) << entry.path();
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
              std::string(std::istreambuf_iterator<char>(b), {}))
        << entry.path();
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST_F(RunCommandTest, AnUnknownLayoutIsRefused) {
  CommandResult result = cleave("run " + model_ + " --layouts sideways");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--layouts"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(path("cache/layouts")));
}

}  // namespace
}  // namespace cleave
