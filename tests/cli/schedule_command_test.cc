// `cleave schedule`: report, JSON, plan and Gantt files, batching, and errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Two independent 2 ms tasks (3 ms on the slow device) feeding a join.
const char* const kTaskGraph = R"({
  "devices": [{"name": "fast", "kind": "gpu"}, {"name": "slow"}],
  "bandwidth": [[0, 1e9], [1e9, 0]],
  "tasks": [{"name": "x", "time": [0.002, 0.003], "output_bytes": 1000},
            {"name": "y", "time": [0.002, 0.003], "output_bytes": 1000},
            {"name": "join", "time": [0.001, 0.001]}],
  "edges": [["x", "join"], ["y", "join"]]
})";

class ScheduleCommand : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    std::ofstream(path("tasks.json")) << kTaskGraph;
  }

  // A solver's core count changes how fast it runs, not the optimum it proves; a count out of
  // range is refused with a message naming the option.
  void expect_core_option_keeps_the_optimum(const std::string& algo, const std::string& option,
                                            const std::string& bad) {
    std::string makespans[2];
    for (int cores = 1; cores <= 2; ++cores) {
      const CommandResult result =
          cleave("schedule " + path("tasks.json") + " --algo " + algo + " --no-bound --json " +
                 option + " " + std::to_string(cores));
      ASSERT_EQ(result.exit_code, 0) << result.err;
      const nlohmann::json report = nlohmann::json::parse(result.out);
      EXPECT_EQ(report["notes"]["status"], "optimal") << option << " " << cores;
      makespans[cores - 1] = report["makespan_seconds"].dump();
    }
    EXPECT_EQ(makespans[0], makespans[1]);
    const CommandResult refused =
        cleave("schedule " + path("tasks.json") + " --algo " + algo + " " + option + " " + bad);
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.err, HasSubstr(option));
  }
};

TEST_F(ScheduleCommand, PrintsMakespanSolveTimeAndDevices) {
  const CommandResult result = cleave("schedule " + path("tasks.json") + " --algo heft --no-bound");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("algorithm:    heft"));
  // x on fast (0-2 ms), y on slow (0-3 ms); join on slow, where x's 1000 bytes arrive at
  // 2.001 ms, runs 3-4 ms (on fast it would wait for y's bytes until 3.001 ms).
  EXPECT_THAT(result.out, HasSubstr("makespan:     4.0000 ms"));
  EXPECT_THAT(result.out, HasSubstr("solve time:"));
  EXPECT_THAT(result.out, HasSubstr("fast"));
  EXPECT_THAT(result.out, HasSubstr("slow"));
}

TEST_F(ScheduleCommand, JsonReportAndPlanFileAgree) {
  const CommandResult result = cleave("schedule " + path("tasks.json") +
                                      " --algo greedy --no-bound --json -o " + path("plan.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  const nlohmann::json plan = nlohmann::json::parse(read_text(path("plan.json")));
  EXPECT_EQ(report["algorithm"], "greedy");
  EXPECT_EQ(plan["strategy"], "greedy");
  EXPECT_DOUBLE_EQ(report["makespan_seconds"].get<double>(), plan["makespan"].get<double>());
  EXPECT_EQ(report["devices"].size(), 2u);
}

TEST_F(ScheduleCommand, WritesAGanttChart) {
  const CommandResult result = cleave("schedule " + path("tasks.json") +
                                      " --algo met --no-bound --gantt " + path("chart.svg"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(read_text(path("chart.svg")), HasSubstr("</svg>"));
}

TEST_F(ScheduleCommand, ThroughputWithABatchReportsSamplesPerSecond) {
  const CommandResult result =
      cleave("schedule " + path("tasks.json") +
             " --algo evolution --iterations 200 --objective throughput --batch 8 --no-bound "
             "--json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["tasks"], 12);  // 3 tasks x 4 slices of 2
  EXPECT_DOUBLE_EQ(report["throughput"].get<double>(),
                   8 / report["makespan_seconds"].get<double>());
}

TEST_F(ScheduleCommand, CoarsenPlansTheChainsAndWritesAPlanOfEveryTask) {
  std::ofstream(path("chain.json")) << R"({
    "devices": [{"name": "cpu"}, {"name": "gpu"}],
    "bandwidth": [[0, 1e9], [1e9, 0]],
    "tasks": [{"name": "a", "time": [0.001, 0.002]}, {"name": "b", "time": [0.002, 0.001]},
              {"name": "c", "time": [0.001, 0.001]}, {"name": "d", "time": [0.003, 0.001]}],
    "edges": [["a", "b"], ["b", "c"], ["b", "d"]]
  })";
  const CommandResult result =
      cleave("schedule " + path("chain.json") + " --algo milp --coarsen --gap 0.01 --no-bound -o " +
             path("plan.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // a -> b is a chain (b fans out to c and d, which stay on their own).
  EXPECT_THAT(result.out, HasSubstr("coarsened:    planned on 3 chains of the 4 tasks"));
  const nlohmann::json plan = nlohmann::json::parse(read_text(path("plan.json")));
  EXPECT_EQ(plan["tasks"].size(), 4u);
}

TEST_F(ScheduleCommand, SolverProcessesGiveTheSamePlan) {
  expect_core_option_keeps_the_optimum("milp-split", "--solver-processes", "-1");
}

TEST_F(ScheduleCommand, SolverThreadsGiveTheOptimum) {
  expect_core_option_keeps_the_optimum("milp", "--solver-threads", "2000");
}

TEST_F(ScheduleCommand, GapOutsideZeroToOneIsRefused) {
  const CommandResult result =
      cleave("schedule " + path("tasks.json") + " --algo milp --gap 2 --no-bound");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--gap"));
}

TEST_F(ScheduleCommand, SaysWhichDevicesAreSimulated) {
  std::ofstream(path("sim.json")) << R"({
    "devices": [{"name": "cpu"}, {"name": "a100", "kind": "gpu", "simulated": true}],
    "bandwidth": [[0, 1e9], [1e9, 0]],
    "tasks": [{"name": "a", "time": [0.002, 0.001]}],
    "edges": []
  })";
  const CommandResult text = cleave("schedule " + path("sim.json") + " --algo heft --no-bound");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("simulated:    a100 is not on this machine"));
  const CommandResult json =
      cleave("schedule " + path("sim.json") + " --algo heft --no-bound --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["simulated_devices"], nlohmann::json::array({"a100"}));
  EXPECT_EQ(report["devices"][0]["simulated"], false);
  EXPECT_EQ(report["devices"][1]["simulated"], true);
  // A machine with no simulated device prints no such line.
  const CommandResult plain = cleave("schedule " + path("tasks.json") + " --algo heft --no-bound");
  EXPECT_THAT(plain.out, ::testing::Not(HasSubstr("simulated:")));
}

TEST_F(ScheduleCommand, UnknownAlgorithmListsTheKnownOnes) {
  const CommandResult result = cleave("schedule " + path("tasks.json") + " --algo magic");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("unknown algorithm \"magic\" (known: met, greedy, heft"));
}

TEST_F(ScheduleCommand, BadTaskGraphNamesTheFileAndTask) {
  std::ofstream(path("bad.json")) << R"({"devices": [{"name": "d"}],
    "tasks": [{"name": "a", "time": [1]}], "edges": [["a", "zz"]]})";
  const CommandResult result = cleave("schedule " + path("bad.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("bad.json: edges[0]: unknown task \"zz\""));
}

TEST_F(ScheduleCommand, FailureLeavesNoPlanFile) {
  std::ofstream(path("bad.json")) << R"({"devices": [{"name": "d", "memory_bytes": 1}],
    "tasks": [{"name": "a", "time": [1], "weight_bytes": 5}]})";
  const CommandResult result =
      cleave("schedule " + path("bad.json") + " --algo heft --no-bound -o " + path("plan.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("fits on no device"));
  EXPECT_FALSE(fs::exists(path("plan.json")));
}

}  // namespace
}  // namespace cleave
