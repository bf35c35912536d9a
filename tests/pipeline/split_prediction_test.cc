// `cleave split --machine` prices the split it writes as auto's table prices its spatial row.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "../spatial/split_testing.h"
#include "cost/cost_table.h"
#include "frontend/load.h"
#include "machine/machine.h"
#include "onnx/onnx_export.h"
#include "pipeline/model_split.h"
#include "pipeline/spatial_run.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Two ranks on a 1 Gbit/s link of 100 us, each end copying a message at 4 GB/s, the second
// rank at half speed: the split's prediction depends on every field.
constexpr const char* kRanks = R"({
  "devices": [{"name": "rank0", "speed": 1}, {"name": "rank1", "speed": 0.5}],
  "bandwidth": [[0, 1.25e8], [1.25e8, 0]], "latency": [[0, 1e-4], [1e-4, 0]],
  "endpoint_bandwidth": 4e9, "wake_seconds": 1e-5})";

class SplitPredictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("cleave_split_prediction_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
    settings_.model = (folder_ / "chain.onnx").string();
    export_onnx(testing::tall_conv_chain(), settings_.model);
    write_machine(machine_from_json(nlohmann::json::parse(kRanks), "ranks.json"),
                  (folder_ / "ranks.json").string());
    settings_.nodes = 2;
    settings_.search = true;
    settings_.objective = "seconds";
    settings_.costs = "static";
    settings_.output = (folder_ / "split").string();
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::filesystem::path folder_;
  ModelSplitSettings settings_;
};

TEST_F(SplitPredictionTest, TheSplitWrittenIsPricedAsTheTablesSpatialRow) {
  settings_.machine = (folder_ / "ranks.json").string();
  const ModelSplit split = split_model_to_folder(settings_);
  ASSERT_TRUE(split.report.contains("machine_prediction")) << split.report.dump(1);
  const nlohmann::json& predicted = split.report.at("machine_prediction");
  // The same model, costs and machine through the table's row: the same split, the same price.
  const Graph graph = load_model(settings_.model, LoadOptions{});
  const SpatialCandidate row =
      spatial_candidate(graph, static_costs(graph), read_machine(settings_.machine), 1);
  ASSERT_TRUE(row.plan) << row.row.rejected;
  EXPECT_DOUBLE_EQ(predicted.at("predicted_seconds").get<double>(), row.row.predicted_seconds);
  EXPECT_DOUBLE_EQ(predicted.at("predicted_ms").get<double>(), row.row.predicted_seconds * 1e3);
  EXPECT_EQ(predicted.at("piece_costs").get<std::string>(), "pieces priced by share");
  EXPECT_GT(row.row.predicted_seconds, 0);
  EXPECT_THAT(split.text, HasSubstr("ranks.json's ranks: predicted"));
  // Its plan is the split's simulated on the ranks: rank 0's hand-out and the link included,
  // so the link's speed moves it.
  nlohmann::json slower = nlohmann::json::parse(kRanks);
  slower["bandwidth"] = {{0, 1.25e7}, {1.25e7, 0}};
  write_machine(machine_from_json(slower, "slow.json"), (folder_ / "slow.json").string());
  settings_.machine = (folder_ / "slow.json").string();
  settings_.output = (folder_ / "split_slow").string();
  const ModelSplit slow = split_model_to_folder(settings_);
  EXPECT_GT(slow.report.at("machine_prediction").at("predicted_seconds").get<double>(),
            predicted.at("predicted_seconds").get<double>());
}

TEST_F(SplitPredictionTest, WithoutAMachineFileThereIsNoRanksPrediction) {
  const ModelSplit split = split_model_to_folder(settings_);
  EXPECT_FALSE(split.report.contains("machine_prediction"));
  EXPECT_THAT(split.text, ::testing::Not(HasSubstr("ranks: predicted")));
}

}  // namespace
}  // namespace cleave
