// RunRecipe::plan_runner: a plan file read and run by another executor (a rank's MPI part).
#include <gtest/gtest.h>

#include <string>

#include "frontend/costs.h"
#include "modelgen/inception.h"
#include "pipeline/plan_and_run.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

Graph branchy() {
  InceptionOptions options;
  options.blocks = 1;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

// What prepare_run asked of the runner.
struct RunnerCalls {
  std::string plan_file;
  std::optional<ConvolutionFamily> family;
  const ExecutorInterface* made = nullptr;
};

// A runner whose plan was costed in channels-last, and whose executor is the sequential one.
PlanRunner channels_last_runner(RunnerCalls& calls) {
  PlanRunner runner;
  runner.read_plan = [&calls](const Graph& graph, const std::string& plan_file) {
    calls.plan_file = plan_file;
    CostChoice costs;
    costs.source = "static";
    ModelPlanOptions options;
    options.strategy = "lc";
    options.workers = 2;
    ModelPlan plan = plan_model(graph, choose_costs(graph, costs), options);
    plan.convolution_family = ConvolutionFamily::kChannelsLast;
    return plan;
  };
  runner.make_executor = [&calls](Graph& graph, const ModelPlan&, const LayoutChoice& layouts) {
    calls.family = layouts.family;
    auto executor = std::make_unique<Executor>(graph, ExecutorOptions{});
    calls.made = executor.get();
    return std::unique_ptr<ExecutorInterface>(std::move(executor));
  };
  return runner;
}

TEST(PlanRunner, ItsExecutorRunsThePlanFileInTheFamilyThePlanWasCostedIn) {
  RunnerCalls calls;
  RunRecipe recipe;
  recipe.plan_file = "lc2.json";
  recipe.layouts = "auto";  // Measured without a runner; a rank may hold only its own weights.
  recipe.plan_runner = channels_last_runner(calls);
  PreparedRun prepared = prepare_run(branchy(), recipe);
  EXPECT_EQ(calls.plan_file, "lc2.json");
  EXPECT_EQ(calls.family, ConvolutionFamily::kChannelsLast);
  EXPECT_FALSE(prepared.layouts.measured);
  EXPECT_EQ(prepared.executor.get(), calls.made);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->plan.strategy, "lc");
}

TEST(PlanRunner, TheLayoutsOptionOverridesThePlansFamily) {
  RunnerCalls calls;
  RunRecipe recipe;
  recipe.plan_file = "lc2.json";
  recipe.layouts = "blocked";
  recipe.plan_runner = channels_last_runner(calls);
  prepare_run(branchy(), recipe);
  EXPECT_EQ(calls.family, ConvolutionFamily::kBlocked);
}

}  // namespace
}  // namespace cleave
