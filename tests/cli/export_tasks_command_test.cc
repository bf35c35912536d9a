// `cleave export-tasks`: the task graph of a model on a machine, read back by `cleave schedule`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kMachine = std::string(CLEAVE_SOURCE_DIR) + "/machines/cpu_t4_a100.json";

class ExportTasksCommand : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    // Two modules of a randomly wired network joined by two channels: branches to spread.
    const CommandResult made = cleave(
        "gen rwnn --modules 2 --nodes 5 --channels-between 2 --seed 3 -o " + path("model.onnx"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
};

TEST_F(ExportTasksCommand, WritesTheTaskGraphForm) {
  const CommandResult result = cleave("export-tasks " + path("model.onnx") + " --machine " +
                                      kMachine + " --costs static -o " + path("tasks.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("3 devices, static costs"));
  const nlohmann::json json = nlohmann::json::parse(read_text(path("tasks.json")));
  ASSERT_EQ(json["devices"].size(), 3u);
  EXPECT_EQ(json["devices"][0]["name"], "cpu");
  EXPECT_DOUBLE_EQ(json["devices"][1]["memory_bytes"].get<double>(), 17179869184.0);
  EXPECT_DOUBLE_EQ(json["bandwidth"][0][2].get<double>(), 32e9);
  ASSERT_FALSE(json["tasks"].empty());
  for (const nlohmann::json& task : json["tasks"]) {
    ASSERT_TRUE(task["name"].is_string());
    ASSERT_EQ(task["time"].size(), 3u);
    // Every device's time is the task's reference time over the device's speed, so the A100
    // (speed 1) is the fastest and the CPU (speed 0.140845) the slowest.
    EXPECT_LE(task["time"][2].get<double>(), task["time"][1].get<double>());
    EXPECT_LE(task["time"][1].get<double>(), task["time"][0].get<double>());
    EXPECT_TRUE(task["output_bytes"].is_number());
    EXPECT_TRUE(task["weight_bytes"].is_number());
  }
  ASSERT_FALSE(json["edges"].empty());
  EXPECT_EQ(json["edges"][0].size(), 2u);
}

TEST_F(ExportTasksCommand, AnalyticalCostsUseEachDevicesRoofline) {
  const CommandResult result = cleave("export-tasks " + path("model.onnx") + " --machine " +
                                      kMachine + " --costs analytical -o " + path("tasks.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(read_text(path("tasks.json")));
  EXPECT_DOUBLE_EQ(json["devices"][2]["roofline"]["seconds_per_op"].get<double>(), 1e-5);
  // Every task pays its device's fixed cost per op; the ratios between devices differ from
  // task to task (a 3x3 convolution is compute-bound, a Relu pays mostly the fixed cost), which
  // one speed per device could not express.
  double smallest_ratio = 1e9, largest_ratio = 0;
  for (const nlohmann::json& task : json["tasks"]) {
    const double cpu = task["time"][0].get<double>();
    const double a100 = task["time"][2].get<double>();
    EXPECT_GE(cpu, 3e-6) << task["name"];
    EXPECT_GE(a100, 1e-5) << task["name"];
    smallest_ratio = std::min(smallest_ratio, cpu / a100);
    largest_ratio = std::max(largest_ratio, cpu / a100);
  }
  EXPECT_LT(smallest_ratio, 1.0);  // tiny ops are faster on the CPU: no launch cost
  EXPECT_GT(largest_ratio, 1.5);   // its convolutions are compute-bound on the CPU
}

TEST_F(ExportTasksCommand, ExportedFileSchedulesLikeTheModel) {
  ASSERT_EQ(cleave("export-tasks " + path("model.onnx") + " --machine " + kMachine +
                   " --costs static -o " + path("tasks.json"))
                .exit_code,
            0);
  for (const std::string algo : {"heft", "greedy"}) {
    const CommandResult from_file =
        cleave("schedule " + path("tasks.json") + " --algo " + algo + " --no-bound --json");
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    const CommandResult from_model =
        cleave("schedule " + path("model.onnx") + " --machine " + kMachine +
               " --costs static --algo " + algo + " --no-bound --json");
    ASSERT_EQ(from_model.exit_code, 0) << from_model.err;
    const nlohmann::json file_report = nlohmann::json::parse(from_file.out);
    const nlohmann::json model_report = nlohmann::json::parse(from_model.out);
    EXPECT_EQ(file_report["tasks"], model_report["tasks"]) << algo;
    EXPECT_GT(file_report["makespan_seconds"].get<double>(), 0) << algo;
    EXPECT_DOUBLE_EQ(file_report["makespan_seconds"].get<double>(),
                     model_report["makespan_seconds"].get<double>())
        << algo;
  }
}

TEST_F(ExportTasksCommand, MissingMachineFileIsNamedAndNothingIsWritten) {
  const CommandResult result =
      cleave("export-tasks " + path("model.onnx") + " --machine " + path("absent.json") +
             " --costs static -o " + path("tasks.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("absent.json"));
  EXPECT_FALSE(fs::exists(path("tasks.json")));
}

TEST_F(ExportTasksCommand, GarbledMachineFileIsNamedAndNothingIsWritten) {
  std::ofstream(path("garbled.json")) << R"({"devices": [{"name": "cpu", "speed": -1}]})";
  const CommandResult result =
      cleave("export-tasks " + path("model.onnx") + " --machine " + path("garbled.json") +
             " --costs static -o " + path("tasks.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("garbled.json"));
  EXPECT_FALSE(fs::exists(path("tasks.json")));

  std::ofstream(path("broken.json")) << "{\"devices\": [";
  const CommandResult broken =
      cleave("export-tasks " + path("model.onnx") + " --machine " + path("broken.json") +
             " --costs static -o " + path("tasks.json"));
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_THAT(broken.err, HasSubstr("broken.json"));
  EXPECT_FALSE(fs::exists(path("tasks.json")));
}

TEST_F(ExportTasksCommand, BadModelLeavesNoFile) {
  std::ofstream(path("bad.onnx")) << "not a model";
  const CommandResult result = cleave("export-tasks " + path("bad.onnx") + " --machine " +
                                      kMachine + " --costs static -o " + path("tasks.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("bad.onnx"));
  EXPECT_FALSE(fs::exists(path("tasks.json")));
}

TEST_F(ExportTasksCommand, MachineIsRequired) {
  const CommandResult result = cleave("export-tasks " + path("model.onnx"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--machine"));
}

TEST_F(ExportTasksCommand, ScheduleRefusesAModelWithoutAMachine) {
  const CommandResult result = cleave("schedule " + path("model.onnx") + " --algo heft");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("a model needs --machine"));
}

}  // namespace
}  // namespace cleave
