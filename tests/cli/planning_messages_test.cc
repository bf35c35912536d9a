// Issue 42, planning and messages: schedulers within --time-limit on 1,000 devices, located
// messages for numbers out of range, device speeds, .npy headers, --input and --cleave-root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command_fixture.h"

namespace cleave {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

auto located() {
  return AllOf(Not(HasSubstr("internal error")), Not(HasSubstr("json.exception")),
               Not(HasSubstr("std::")));
}

// `count` identical devices, every pair linked.
void write_identical_machine(const std::string& file, int count) {
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < count; ++i) devices.push_back({{"name", "d" + std::to_string(i)}});
  std::vector<std::vector<double>> bandwidth(count, std::vector<double>(count, 1e10));
  for (int i = 0; i < count; ++i) bandwidth[i][i] = 0;
  std::ofstream(file) << nlohmann::json{{"devices", devices}, {"bandwidth", bandwidth}}.dump();
}

class PlanningCommand : public DemoModelFixture {
 protected:
  // Exports the demo model's task graph on `devices` identical devices, then schedules it with
  // HEFT under --time-limit 1 (the lower bound included); the seconds the schedule took.
  double schedule_on(int devices) {
    write_identical_machine(path("m.json"), devices);
    const CommandResult exported =
        cleave("export-tasks " + model_ + " --machine " + path("m.json") + " --costs static -o " +
               path("tasks.json"));
    EXPECT_EQ(exported.exit_code, 0) << exported.err;
    const auto began = std::chrono::steady_clock::now();
    const CommandResult scheduled =
        cleave("schedule " + path("tasks.json") + " --algo heft --time-limit 1 --json -o " +
               path("plan.json"));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    EXPECT_EQ(scheduled.exit_code, 0) << scheduled.err;
    EXPECT_TRUE(std::filesystem::exists(path("plan.json")));
    return seconds;
  }
};

TEST_F(PlanningCommand, HeftOnAHundredDevicesStaysNearItsTimeLimit) {
  EXPECT_LT(schedule_on(100), 10.0);
}

TEST_F(PlanningCommand, HeftOnAThousandDevicesStaysNearItsTimeLimit) {
  EXPECT_LT(schedule_on(1000), 20.0);
}

TEST_F(PlanningCommand, ANumberBeyondADoubleNamesTheFileAndPlace) {
  std::ofstream(path("tasks.json")) << "{\"devices\": [{\"name\": \"a\", \"speed\": 1e400}]}";
  const CommandResult result = cleave("schedule " + path("tasks.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr(path("tasks.json") + ": line 1, column 37: number out of range: "
                                                   "1e400"),
                    located()));
}

TEST_F(PlanningCommand, AFileSystemFailureReachesTheUserInWords) {
  // A name longer than the file system allows fails in the system calls, not in cleave's checks.
  const CommandResult result =
      cleave("split " + model_ + " --nodes 2 -o " + path(std::string(300, 'a')));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, AllOf(HasSubstr("cleave: error: "), HasSubstr("File name too long"),
                                located(), Not(HasSubstr("filesystem error"))));
}

TEST_F(PlanningCommand, ATinyDeviceSpeedIsRefusedBeforePlanning) {
  std::ofstream(path("m.json")) << R"({"devices": [{"name": "a"}, {"name": "b", "speed": 1e-300}],
             "bandwidth": [[0, 1e9], [1e9, 0]]})";
  const CommandResult result = cleave("plan " + model_ + " --machine " + path("m.json") +
                                      " --costs static -o " + path("plan.json"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, AllOf(HasSubstr(path("m.json") + ": devices[1].speed: expected at most "
                                                           "1e+06 times slower"),
                                located()));
  EXPECT_FALSE(std::filesystem::exists(path("plan.json")));
}

TEST_F(PlanningCommand, ADuplicateInputIsRefusedNamingIt) {
  const CommandResult result =
      cleave("run " + model_ + " --input x=" + path("a.npy") + " --input x=" + path("b.npy"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("--input x: given twice"));
}

TEST_F(PlanningCommand, ANegativeNpyDimensionIsRefusedNamingTheFile) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }\n";
  std::string contents("\x93NUMPY\x01\x00", 8);
  contents += static_cast<char>(header.size());
  contents += '\0';
  contents += header;
  contents.append(12, '\0');
  std::ofstream(path("x.npy"), std::ios::binary) << contents;
  const CommandResult result = cleave("run " + model_ + " --input x=" + path("x.npy"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(path("x.npy") + ": malformed .npy header"));
}

TEST_F(PlanningCommand, AMissingCleaveRootIsRefused) {
  const CommandResult result = cleave("codegen " + model_ + " --lang cpp --layouts plain -o " +
                                      path("gen") + " --cleave-root " + path("nonexistent"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err,
              HasSubstr("--cleave-root " + path("nonexistent") + ": not cleave's source folder"));
  EXPECT_FALSE(std::filesystem::exists(path("gen")));
}

}  // namespace
}  // namespace cleave
