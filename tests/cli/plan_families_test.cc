// `cleave plan --explain` and `--simulate`: the candidate table of every family, as text and
// as JSON, and planning on paper for a cluster far larger than this host.
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "command_fixture.h"

namespace cleave {
namespace {

class PlanFamiliesTest : public DemoModelFixture {};

TEST_F(PlanFamiliesTest, ExplainAsJsonListsEveryCandidateWithItsFamily) {
  CommandResult result = cleave("plan " + model_ + " --costs static --workers 4 --explain --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json plan = nlohmann::json::parse(result.out);
  ASSERT_TRUE(plan["candidates"].is_array());
  const std::set<std::string> families{"sequential", "task",     "heterogeneous",
                                       "spatial",    "pipeline", "data-parallel"};
  int chosen = 0;
  for (const auto& row : plan["candidates"]) {
    EXPECT_EQ(families.count(row["family"].get<std::string>()), 1u) << row.dump();
    for (const char* key : {"configuration", "predicted_seconds", "memory_bytes", "rejected"})
      EXPECT_TRUE(row.contains(key)) << key << " in " << row.dump();
    chosen += row["chosen"].get<bool>();
  }
  EXPECT_EQ(chosen, 1);
  EXPECT_GT(plan["planning_seconds"].get<double>(), 0);
  EXPECT_TRUE(plan.contains("family"));
}

TEST_F(PlanFamiliesTest, ExplainPrintsTheTableWithTheChosenRowMarked) {
  CommandResult result = cleave("plan " + model_ + " --costs static --samples 4 --explain");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("data-parallel"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("pipeline"), std::string::npos) << result.out;
  // The stages' row names the configuration `cleave run --plan pipeline` takes.
  EXPECT_NE(result.out.find(" stages x 1 thread"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\n* "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("planned in"), std::string::npos);
}

TEST_F(PlanFamiliesTest, SimulateOnASixtyFourRankClusterPlansOnPaper) {
  const std::string machine = std::string(CLEAVE_SOURCE_DIR) + "/machines/cluster-64.json";
  CommandResult result =
      cleave("plan " + model_ + " --costs static --machine " + machine + " --simulate --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json plan = nlohmann::json::parse(result.out);
  std::set<std::string> families;
  for (const auto& row : plan["candidates"]) families.insert(row["family"]);
  EXPECT_TRUE(families.count("heterogeneous")) << plan["candidates"].dump();
  EXPECT_TRUE(families.count("spatial")) << plan["candidates"].dump();
  EXPECT_EQ(plan["workers"].size(), 64u);
}

// A plan on paper read no weights and is for devices this host may not have: `run` says so
// rather than "made for another model".
TEST_F(PlanFamiliesTest, APlanMadeOnPaperIsRefusedByRunNamingSimulate) {
  const std::string machine = std::string(CLEAVE_SOURCE_DIR) + "/machines/cluster-8.json";
  const std::string plan = path("paper.json");
  CommandResult made =
      cleave("plan " + model_ + " --costs static --machine " + machine + " --simulate -o " + plan);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  CommandResult run = cleave("run " + model_ + " --plan " + plan);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("made on paper"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("without --simulate"), std::string::npos) << run.err;
}

// Two ranks, 2 ms and 100 MB/s apart: data-parallel's second sample runs on rank 1, which
// gets the model input from rank 0 first and sends the output back after; one sample all on
// rank 0 sends nothing. The plan file's task graph says which values and bytes.
TEST_F(PlanFamiliesTest, OnRanksThePredictionPricesTheInputHandOutAndTheOutputGather) {
  std::ofstream(path("m.json")) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
             "bandwidth": [[0, 1e8], [1e8, 0]], "latency": [[0, 0.002], [0.002, 0]]})";
  const std::string base = "plan " + model_ + " --costs static --machine " + path("m.json");
  ASSERT_EQ(cleave(base + " --strategy sequential -o " + path("seq.json")).exit_code, 0);
  const CommandResult made =
      cleave(base + " --strategy data-parallel --samples 2 -o " + path("dp.json"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const nlohmann::json seq = nlohmann::json::parse(read_text(path("seq.json")));
  const nlohmann::json dp = nlohmann::json::parse(read_text(path("dp.json")));
  std::map<std::string, double> inputs, outputs;
  for (const auto& task : dp["task_graph"]["tasks"]) {
    if (task.value("batch_begin", 0) != 1) continue;
    for (const auto& value : task.value("model_inputs", nlohmann::json::array()))
      inputs[value["name"]] = value["bytes"];
    for (const auto& value : task.value("model_outputs", nlohmann::json::array()))
      outputs[value["name"]] = value["bytes"];
  }
  ASSERT_EQ(inputs.size(), 1u) << dp["task_graph"].dump();
  ASSERT_EQ(outputs.size(), 1u) << dp["task_graph"].dump();
  EXPECT_GT(inputs.begin()->second, 0);
  const double expected = seq["makespan"].get<double>() + (0.002 + inputs.begin()->second / 1e8) +
                          (0.002 + outputs.begin()->second / 1e8);
  EXPECT_NEAR(dp["makespan"].get<double>(), expected, 1e-9);
  // Auto's data-parallel row is the same plan, predicted alike.
  const CommandResult table = cleave(base + " --samples 2 --explain --json");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  bool found = false;
  const nlohmann::json rows = nlohmann::json::parse(table.out)["candidates"];
  for (const auto& row : rows) {
    if (row["family"] != "data-parallel") continue;
    found = true;
    EXPECT_NEAR(row["predicted_seconds"].get<double>(), expected, 1e-9) << row.dump();
  }
  EXPECT_TRUE(found) << table.out;
}

TEST_F(PlanFamiliesTest, SimulateWithoutAMachineFileIsRefused) {
  CommandResult result = cleave("plan " + model_ + " --costs static --simulate");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--simulate"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--machine"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace cleave
