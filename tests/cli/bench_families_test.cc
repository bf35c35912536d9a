// `cleave bench --families`: one timed row per runnable family of auto's candidate table.
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>

#include "command_fixture.h"

namespace cleave {
namespace {

class BenchFamiliesTest : public DemoModelFixture {};

// The families `plan --explain` lists that a whole-graph executor runs; hybrid task plans
// count apart from even splits.
std::set<std::string> runnable_families(const nlohmann::json& plan) {
  std::set<std::string> families;
  for (const nlohmann::json& row : plan["candidates"]) {
    const std::string family = row["family"];
    if (family == "spatial" || family == "pipeline") continue;
    const std::string configuration = row["configuration"];
    families.insert(configuration.rfind("hybrid", 0) == 0 ? "hybrid " + family : family);
  }
  return families;
}

TEST_F(BenchFamiliesTest, TimesOneRowPerRunnableFamilyOfTheTable) {
  CommandResult planned = cleave("plan " + model_ + " --costs static --workers 2 --explain --json");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const std::set<std::string> expected = runnable_families(nlohmann::json::parse(planned.out));

  CommandResult result = cleave("bench " + model_ +
                                " --families --json --costs static --workers 2 --repeat 1 "
                                "--warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  ASSERT_TRUE(report["families"].is_array()) << result.out;
  std::set<std::string> measured;
  int fastest = 0;
  for (const nlohmann::json& row : report["families"]) {
    for (const char* field :
         {"family", "configuration", "predicted_seconds", "measured_seconds", "ratio"}) {
      EXPECT_TRUE(row.contains(field)) << field << " in " << row.dump();
    }
    const std::string configuration = row["configuration"];
    measured.insert(configuration.rfind("hybrid", 0) == 0
                        ? "hybrid " + row["family"].get<std::string>()
                        : row["family"].get<std::string>());
    EXPECT_GT(row["measured_seconds"].get<double>(), 0) << row.dump();
    EXPECT_GT(row["predicted_seconds"].get<double>(), 0) << row.dump();
    EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), row["measured_seconds"].get<double>() /
                                                     row["predicted_seconds"].get<double>());
    fastest += row["fastest"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(measured, expected);
  EXPECT_EQ(fastest, 1);
}

// The row auto chose by prediction is measured and marked, so that the table shows how far
// auto's choice is from the fastest family.
TEST_F(BenchFamiliesTest, MarksAutosChoice) {
  CommandResult planned = cleave("plan " + model_ + " --costs static --workers 2 --explain --json");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const nlohmann::json plan = nlohmann::json::parse(planned.out);
  CommandResult result = cleave("bench " + model_ +
                                " --families --json --costs static --workers 2 --repeat 1 "
                                "--warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  int chosen = 0;
  for (const nlohmann::json& row : report["families"]) {
    if (!row["chosen"].get<bool>()) continue;
    ++chosen;
    EXPECT_EQ(row["family"], plan["family"]) << row.dump();
    EXPECT_EQ(row["configuration"], plan["configuration"]) << row.dump();
  }
  EXPECT_EQ(chosen, 1) << result.out;
}

// Several samples per run bring whole-model data parallelism and pipelined stages, both timed
// beside the others (the stages as `cleave run --plan pipeline` runs them).
TEST_F(BenchFamiliesTest, SeveralSamplesTimeDataParallelAndThePipeline) {
  CommandResult result = cleave("bench " + model_ +
                                " --families --json --costs static --workers 2 --samples 2 "
                                "--repeat 1 --warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  bool data_parallel = false, pipeline = false;
  for (const nlohmann::json& row : report["families"]) {
    data_parallel = data_parallel || row["family"] == "data-parallel";
    if (row["family"] == "pipeline") {
      pipeline = true;
      EXPECT_NE(row["configuration"].get<std::string>().find(" stages x "), std::string::npos);
      EXPECT_GT(row["measured_seconds"].get<double>(), 0);
    }
  }
  EXPECT_TRUE(data_parallel) << result.out;
  EXPECT_TRUE(pipeline) << result.out;
  EXPECT_EQ(report["not_measured"].size(), 0u) << result.out;
}

// Each timed row carries the costs its prediction used, as `plan --json`'s candidates do.
TEST_F(BenchFamiliesTest, EachRowSaysWhatItsPredictionUsed) {
  CommandResult planned =
      cleave("plan " + model_ + " --costs static --workers 2 --samples 2 --explain --json");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  std::map<std::string, nlohmann::json> planned_costs;
  for (const nlohmann::json& row : nlohmann::json::parse(planned.out)["candidates"])
    planned_costs[row["configuration"]] = row["costs"];
  CommandResult result = cleave("bench " + model_ +
                                " --families --json --costs static --workers 2 --samples 2 "
                                "--repeat 1 --warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  ASSERT_FALSE(report["families"].empty()) << result.out;
  for (const nlohmann::json& row : report["families"]) {
    const nlohmann::json& costs = row["costs"];
    ASSERT_TRUE(costs.is_object()) << row.dump();
    EXPECT_EQ(costs["source"], "static weights") << row.dump();
    EXPECT_GE(costs["threads"].get<int>(), 1) << row.dump();
    EXPECT_TRUE(costs["links"].is_string()) << row.dump();
    if (row["family"] == "pipeline") {
      EXPECT_EQ(costs["links"], "hand-offs between stages not priced") << row.dump();
    }
    const auto found = planned_costs.find(row["configuration"]);
    if (found != planned_costs.end()) {
      EXPECT_EQ(costs, found->second) << row.dump();
    }
  }
}

TEST_F(BenchFamiliesTest, TheTextNamesTheFastestFamily) {
  CommandResult result =
      cleave("bench " + model_ + " --families --costs static --workers 2 --repeat 1 --warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("meas/pred"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("fastest"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("sequential"), std::string::npos) << result.out;
}

TEST_F(BenchFamiliesTest, SamplesNeedTheFamilies) {
  CommandResult result = cleave("bench " + model_ + " --samples 2");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--families"), std::string::npos) << result.err;
}

TEST_F(BenchFamiliesTest, ASplitFolderIsNotTimedWithTheFamilies) {
  CommandResult result = cleave("bench " + model_ + " --families --split somewhere");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--split"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace cleave
