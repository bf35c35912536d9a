// Auto over the pipeline family: a stage cut predicted faster (or a little slower) is timed
// against the plan auto kept and runs when it measures faster; the candidate names what
// `--plan pipeline` takes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "frontend/load.h"
#include "ir/text.h"
#include "pipeline/pipeline_run.h"
#include "pipeline/plan_and_run.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

Graph chain() {
  Graph g = parse_graph(R"(graph g (%x: f32[1,64]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %y = Tanh(%b)
  return %y
}
)");
  infer_shapes(g, "test");
  return g;
}

// Auto on 2 workers for 4 samples, static costs, and times from `ms` by the name the timer
// is given (a pipeline configuration, else "kept").
RunRecipe recipe_with(std::map<std::string, double>& ms, std::map<std::string, int>& calls) {
  RunRecipe recipe;
  recipe.strategy = "auto";
  recipe.layouts = "blocked";
  recipe.costs = "static";
  recipe.workers = 2;
  recipe.samples = 4;
  recipe.timer = [&ms, &calls](const std::string& name, ExecutorInterface&,
                               const std::vector<SampleInputs>&) {
    ++calls[name];
    return parse_pipeline_configuration(name) ? ms.at("pipeline") : ms.at("kept");
  };
  return recipe;
}

// The pipeline row as auto's table would hold it, with a prediction (fake cost) of our own.
PlanCandidate pipeline_row(double predicted_seconds) {
  PlanCandidate row;
  row.strategy = "pipeline";
  row.family = "pipeline";
  row.configuration = pipeline_configuration(2, 1);
  row.predicted_seconds = predicted_seconds;
  return row;
}

// The last row of `family` (the one a test offered, after auto's own).
const PlanCandidate& row_of(const ModelPlan& plan, const std::string& family) {
  for (auto row = plan.candidates.rbegin(); row != plan.candidates.rend(); ++row) {
    if (row->family == family) return *row;
  }
  throw Error("no row of family " + family);
}

struct Fixture {
  std::map<std::string, double> ms;
  std::map<std::string, int> calls;
  RunRecipe recipe = recipe_with(ms, calls);
  PreparedRun prepared;
  std::function<SampleInputs(int)> input_of;

  explicit Fixture(std::map<std::string, double> times) : ms(std::move(times)) {
    // Auto's own offers untimed: the test's offer is the only one the timer counts.
    recipe.auto_check = false;
    prepared = prepare_run(chain(), recipe);
    recipe.auto_check = true;
    input_of = [this](int s) { return random_inputs(prepared.graph, s); };
  }
  std::unique_ptr<StageExecutor> offer(double predicted_seconds) {
    return pipeline_if_faster(prepared, recipe, *prepared.plan, *prepared.executor, input_of,
                              pipeline_row(predicted_seconds));
  }
};

TEST(AutoPipeline, ConfigurationNamesWhatThePipelineStrategyTakes) {
  EXPECT_EQ(pipeline_configuration(3, 2), "3 stages x 2 threads");
  EXPECT_EQ(parse_pipeline_configuration("3 stages x 2 threads"), (std::pair{3, 2}));
  EXPECT_EQ(parse_pipeline_configuration("2 stages x 1 thread"), (std::pair{2, 1}));
  EXPECT_FALSE(parse_pipeline_configuration("lc, 2 workers x 1 thread"));
}

TEST(AutoPipeline, PredictedFasterAndTimedFasterRunsThePipeline) {
  Fixture f({{"pipeline", 1.0}, {"kept", 2.0}});
  const std::vector<std::vector<Tensor>> want = f.prepared.executor->run(f.prepared.inputs);
  std::unique_ptr<StageExecutor> pipeline = f.offer(1e-12);
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(f.calls[pipeline_configuration(2, 1)], 8);  // two warm-ups, two blocks of three
  run_pipeline_instead(f.prepared, f.recipe, std::move(pipeline));
  ASSERT_NE(f.prepared.pipeline, nullptr);
  EXPECT_EQ(f.prepared.executor.get(), f.prepared.pipeline);
  EXPECT_EQ(f.prepared.parallel, nullptr);
  EXPECT_TRUE(row_of(*f.prepared.plan, "pipeline").chosen);
  const std::vector<std::vector<Tensor>> got = f.prepared.executor->run(f.prepared.inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < want.size(); ++s) {
    ASSERT_EQ(got[s].size(), 1u);
    EXPECT_EQ(got[s][0].byte_size(), want[s][0].byte_size());
    EXPECT_EQ(std::memcmp(got[s][0].raw(), want[s][0].raw(), want[s][0].byte_size()), 0)
        << "sample " << s;
  }
}

TEST(AutoPipeline, TimedSlowerKeepsThePlan) {
  Fixture f({{"pipeline", 3.0}, {"kept", 2.0}});
  EXPECT_EQ(f.offer(1e-12), nullptr);
  EXPECT_THAT(row_of(*f.prepared.plan, "pipeline").rejected, HasSubstr("timed slower than"));
}

TEST(AutoPipeline, PredictedFarSlowerIsNotTimed) {
  Fixture f({{"pipeline", 1.0}, {"kept", 2.0}});
  EXPECT_EQ(f.offer(1e9), nullptr);
  EXPECT_EQ(f.calls[pipeline_configuration(2, 1)], 0);
  EXPECT_THAT(row_of(*f.prepared.plan, "pipeline").rejected, HasSubstr("not faster than"));
}

TEST(AutoPipeline, PredictedALittleSlowerIsTimedAndRunsOnlyWhenFaster) {
  Fixture slower({{"pipeline", 2.0}, {"kept", 2.0}});
  const double kept = slower.prepared.plan->plan.makespan;
  EXPECT_EQ(slower.offer(1.1 * kept), nullptr) << "a tie keeps the plan predicted faster";
  EXPECT_EQ(slower.calls[pipeline_configuration(2, 1)], 8);
  EXPECT_THAT(row_of(*slower.prepared.plan, "pipeline").rejected,
              HasSubstr("timed no faster than"));
  Fixture faster({{"pipeline", 1.0}, {"kept", 2.0}});
  EXPECT_NE(faster.offer(1.1 * faster.prepared.plan->plan.makespan), nullptr);
  Fixture unchecked({{"pipeline", 1.0}, {"kept", 2.0}});
  unchecked.recipe.auto_check = false;
  EXPECT_EQ(unchecked.offer(1.1 * unchecked.prepared.plan->plan.makespan), nullptr)
      << "without the timed check only a faster prediction runs";
}

TEST(AutoPipeline, AutoListsThePipelineRowForSeveralSamples) {
  Fixture f({{"pipeline", 1.0}, {"kept", 2.0}});
  const PlanCandidate& row = row_of(*f.prepared.plan, "pipeline");
  EXPECT_TRUE(parse_pipeline_configuration(row.configuration)) << row.configuration;
}

}  // namespace
}  // namespace cleave
