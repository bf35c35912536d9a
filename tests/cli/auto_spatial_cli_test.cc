// `cleave run --plan auto --machine` and `cleave bench --families --machine`: the spatial family
// chosen, run and measured beside the others.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class AutoSpatialCommand : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
    // A chain of convolutions over a tall image: on static costs a split along H over two
    // devices is predicted about twice as fast as any plan of the whole graph.
    Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,4,96,16]) {
  @w1: f32[8,4,3,3]
  @w2: f32[8,8,3,3]
  @w3: f32[4,8,3,3]
  %c1 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r1 = Relu(%c1)
  %c2 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r1, @w2)
  %r2 = Relu(%c2)
  %c3 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%r2, @w3)
  %t = Tanh(%c3)
  return %t
}
)");
    int k = 0;
    for (ValueId id : graph.initializers()) {
      TensorData& data = *graph.value(id).initializer;
      std::vector<float> values(static_cast<std::size_t>(data.element_count()));
      for (float& v : values) v = 0.02f * static_cast<float>((k++ % 13) - 6);
      data = TensorData::from(DataType::kFloat, data.dims, values);
    }
    export_onnx(graph, path("m.onnx"));
    machine_ = std::string(CLEAVE_SOURCE_DIR) + "/machines/this_machine.json";
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    CommandFixture::TearDown();
  }
  std::string machine_;
};

// Without the timed check auto keeps its prediction: the split, run and reported as such.
TEST_F(AutoSpatialCommand, RunReportsTheSpatialFamilyWhenPredictedFastest) {
  const CommandResult result =
      cleave("run " + path("m.onnx") + " --plan auto --costs static --layouts blocked --machine " +
             machine_ + " --no-auto-check --fixed-threads --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["plan"]["family"], "spatial") << result.out;
  EXPECT_THAT(report["plan"]["configuration"].get<std::string>(),
              StartsWith("split over 2 devices along h"));
  EXPECT_EQ(report["plan"]["workers"], 2);
  ASSERT_EQ(report["outputs"].size(), 1u);
  EXPECT_EQ(report["outputs"][0]["name"], "t");
}

// The run's table holds the spatial row: chosen, or with the reason it was not.
TEST_F(AutoSpatialCommand, TheRunsCandidateTableHoldsTheSpatialRow) {
  const CommandResult result =
      cleave("run " + path("m.onnx") + " --plan auto --costs static --layouts blocked --machine " +
             machine_ + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  int spatial = 0;
  for (const nlohmann::json& row : report["plan"]["candidates"]) {
    if (row["family"] != "spatial") continue;
    ++spatial;
    EXPECT_EQ(row["chosen"].get<bool>(), report["plan"]["family"] == "spatial") << row.dump();
    EXPECT_EQ(row["rejected"].get<std::string>().empty(), row["chosen"].get<bool>()) << row.dump();
  }
  EXPECT_EQ(spatial, 1) << result.out;
}

TEST_F(AutoSpatialCommand, TheTextReportNamesTheFamily) {
  const CommandResult result =
      cleave("run " + path("m.onnx") + " --plan auto --costs static --layouts blocked --machine " +
             machine_ + " --no-auto-check --fixed-threads");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("family     spatial (split over 2 devices along h"));
}

TEST_F(AutoSpatialCommand, AMachineFileNeedsPlanAuto) {
  const CommandResult result = cleave("run " + path("m.onnx") + " --machine " + machine_);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--machine"));
  EXPECT_THAT(result.err, HasSubstr("--plan auto"));
}

TEST_F(AutoSpatialCommand, BenchMeasuresTheSpatialRowBesideTheOthers) {
  const CommandResult result = cleave("bench " + path("m.onnx") +
                                      " --families --json --costs static --workers 2 --machine " +
                                      machine_ + " --repeat 1 --warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  int spatial = 0;
  for (const nlohmann::json& row : report["families"]) {
    if (row["family"] != "spatial") continue;
    ++spatial;
    EXPECT_GT(row["measured_seconds"].get<double>(), 0) << row.dump();
    EXPECT_GT(row["predicted_seconds"].get<double>(), 0) << row.dump();
    EXPECT_LT(row["max_abs_difference"].get<double>(), 1e-4) << row.dump();
  }
  EXPECT_EQ(spatial, 1) << result.out;
  for (const nlohmann::json& row : report["not_measured"])
    EXPECT_NE(row["family"], "spatial") << row.dump();
}

TEST_F(AutoSpatialCommand, BenchTakesAMachineFileOnlyWithTheFamilies) {
  const CommandResult result = cleave("bench " + path("m.onnx") + " --machine " + machine_);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--families"));
}

// `cleave plan` lists the row with a reason of its own, not the split command.
TEST_F(AutoSpatialCommand, PlanGivesTheSpatialRowAReason) {
  const CommandResult result =
      cleave("plan " + path("m.onnx") + " --costs static --explain --json --machine " + machine_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json plan = nlohmann::json::parse(result.out);
  int spatial = 0;
  for (const nlohmann::json& row : plan["candidates"]) {
    if (row["family"] != "spatial") continue;
    ++spatial;
    EXPECT_FALSE(row["rejected"].get<std::string>().empty()) << row.dump();
    EXPECT_THAT(row["rejected"].get<std::string>(), Not(HasSubstr("cleave split")));
  }
  EXPECT_EQ(spatial, 1) << result.out;
}

}  // namespace
}  // namespace cleave
