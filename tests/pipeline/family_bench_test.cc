// `bench --families` marks what `run --plan auto` runs: the table's choice as its timed check
// keeps it, driven by a fake timer.
#include "pipeline/family_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "modelgen/inception.h"
#include "onnx/onnx_export.h"
#include "pipeline/pipeline_run.h"

namespace cleave {
namespace {

// Two Inception blocks: their branches are independent, so auto predicts a parallel plan on
// two workers from static costs.
Graph branchy() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

// The check's fake times: the first plan it times (the predicted choice's warm-up comes
// first) takes `choice_ms`, sequential on every core `sequential_ms`, any other plan 5 ms.
RunTimer fake_timer(double choice_ms, double sequential_ms) {
  auto first = std::make_shared<std::string>();
  return [=](const std::string& name, ExecutorInterface&, const std::vector<SampleInputs>&) {
    if (name == "sequential") return sequential_ms;
    if (first->empty()) *first = name;
    return name == *first ? choice_ms : 5.0;
  };
}

class FamilyBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("cleave_family_bench_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_);
    // Layouts measured here go to this test's folder, not the shared cache.
    setenv("CLEAVE_CACHE_DIR", (folder_ / "cache").c_str(), 1);
    settings_.model = (folder_ / "branchy.onnx").string();
    export_onnx(branchy(), settings_.model);
    settings_.costs = "static";
    settings_.workers = 2;
    settings_.warmup = 0;
    settings_.repeat = 1;
    settings_.families = true;
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    std::filesystem::remove_all(folder_);
  }

  // The configuration `plan --strategy sequential` gives on the bench's cores.
  std::string sequential_on_every_core() const {
    const Graph graph = branchy();
    ModelPlanOptions options;
    options.strategy = "sequential";
    options.workers = settings_.workers;
    return plan_model(graph, static_costs(graph), options).configuration;
  }

  std::filesystem::path folder_;
  ModelBenchSettings settings_;
};

const FamilyBenchRow* only_row_auto_runs(const FamilyBench& bench) {
  const FamilyBenchRow* found = nullptr;
  for (const FamilyBenchRow& row : bench.rows) {
    if (!row.auto_runs) continue;
    if (found) return nullptr;
    found = &row;
  }
  return found;
}

TEST_F(FamilyBenchTest, APredictionTimedSlowerThanSequentialRunsSequential) {
  const FamilyBench bench = run_family_bench(settings_, fake_timer(2.0, 1.0));
  ASSERT_TRUE(bench.auto_check) << "auto should have predicted a parallel plan";
  EXPECT_EQ(bench.auto_check->kept, "sequential");
  const FamilyBenchRow* runs = only_row_auto_runs(bench);
  ASSERT_NE(runs, nullptr) << bench.report.dump(2);
  EXPECT_EQ(runs->family, "sequential");
  EXPECT_EQ(runs->configuration, sequential_on_every_core());
  EXPECT_FALSE(runs->chosen);
  EXPECT_FALSE(runs->ms.empty()) << "what auto runs is timed with the others";
  for (const FamilyBenchRow& row : bench.rows) {
    if (row.chosen) {
      EXPECT_NE(row.family, "sequential") << row.configuration;
    }
  }
}

TEST_F(FamilyBenchTest, APredictionTimedFasterIsWhatAutoRuns) {
  const FamilyBench bench = run_family_bench(settings_, fake_timer(1.0, 2.0));
  ASSERT_TRUE(bench.auto_check);
  EXPECT_EQ(bench.auto_check->kept, bench.auto_check->candidate_configuration);
  const FamilyBenchRow* runs = only_row_auto_runs(bench);
  ASSERT_NE(runs, nullptr) << bench.report.dump(2);
  EXPECT_TRUE(runs->chosen);
  EXPECT_EQ(runs->configuration, bench.auto_check->candidate_configuration);
  EXPECT_FALSE(runs->ms.empty());
}

// The bench of a stream of 32 samples (stages fill up: predicted near data-parallel), timed
// with the pipeline at `pipeline_ms`, sequential on every core 3 ms and any other plan 2 ms;
// its pipeline check must have timed the stages.
FamilyBench with_timed_stages(ModelBenchSettings settings, double pipeline_ms) {
  settings.samples = 32;
  const FamilyBench bench = run_family_bench(
      settings, [=](const std::string& name, ExecutorInterface&, const std::vector<SampleInputs>&) {
        if (parse_pipeline_configuration(name)) return pipeline_ms;
        return name == "sequential" ? 3.0 : 2.0;
      });
  EXPECT_TRUE(bench.pipeline_check.starts_with("timed pipeline")) << bench.pipeline_check;
  EXPECT_NE(only_row_auto_runs(bench), nullptr);
  return bench;
}

// For several samples `run --plan auto` offers its pipelined stages against what its check
// kept; bench marks the pipeline's row when that check times it faster.
TEST_F(FamilyBenchTest, StagesTimedFasterThanWhatTheCheckKeptAreWhatAutoRuns) {
  const FamilyBench bench = with_timed_stages(settings_, 1.0);
  EXPECT_TRUE(bench.pipeline_check.ends_with(": runs the pipeline")) << bench.pipeline_check;
  ASSERT_NE(only_row_auto_runs(bench), nullptr);
  EXPECT_EQ(only_row_auto_runs(bench)->family, "pipeline");
  EXPECT_EQ(bench.report.value("pipeline_check", ""), bench.pipeline_check);
  EXPECT_NE(family_bench_text(settings_, bench).find("auto's pipeline check"), std::string::npos);
}

TEST_F(FamilyBenchTest, StagesTimedSlowerLeaveWhatTheCheckKept) {
  const FamilyBench bench = with_timed_stages(settings_, 9.0);
  EXPECT_FALSE(bench.pipeline_check.ends_with(": runs the pipeline")) << bench.pipeline_check;
  ASSERT_NE(only_row_auto_runs(bench), nullptr);
  EXPECT_NE(only_row_auto_runs(bench)->family, "pipeline");
}

TEST_F(FamilyBenchTest, TheJsonNamesTheCheckAndTheRowAutoRuns) {
  const FamilyBench bench = run_family_bench(settings_, fake_timer(2.0, 1.0));
  const nlohmann::json& report = bench.report;
  ASSERT_TRUE(report.contains("auto_check")) << report.dump(2);
  const nlohmann::json& check = report["auto_check"];
  EXPECT_EQ(check["candidate"], bench.auto_check->candidate_configuration);
  EXPECT_DOUBLE_EQ(check["candidate_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(check["sequential_ms"].get<double>(), 1.0);
  EXPECT_EQ(check["kept"], "sequential");
  EXPECT_TRUE(check.contains("runner_up"));
  EXPECT_TRUE(check.contains("runner_up_ms"));
  int auto_runs = 0;
  for (const nlohmann::json& row : report["families"]) {
    ASSERT_TRUE(row.contains("auto_runs")) << row.dump();
    if (!row["auto_runs"].get<bool>()) continue;
    ++auto_runs;
    EXPECT_EQ(row["configuration"], sequential_on_every_core()) << row.dump();
  }
  EXPECT_EQ(auto_runs, 1) << report.dump(2);
}

TEST_F(FamilyBenchTest, TheTextMarksTheRowAutoRunsAndTheCheck) {
  const FamilyBench bench = run_family_bench(settings_, fake_timer(2.0, 1.0));
  const std::string text = family_bench_text(settings_, bench);
  EXPECT_NE(text.find("auto runs"), std::string::npos) << text;
  EXPECT_NE(text.find("auto's choice"), std::string::npos) << text;
  EXPECT_NE(text.find("kept sequential"), std::string::npos) << text;
}

}  // namespace
}  // namespace cleave
