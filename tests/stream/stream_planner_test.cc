// The stream planner places filters before the run; the executor runs the placement it is given.
#include "stream/stream_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/registry.h"
#include "stream/builder.h"
#include "test_models.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Three dense models in a pipeline, rates 1:2, peek 3 pop 1, peek 4 pop 2 (the executor
// tests' audio pipeline).
StreamProgram three_models() {
  static const std::shared_ptr<Graph> features =
      testing::dense_model("features", {1, 16}, 8, {2, 4}, "Relu", 1);
  static const std::shared_ptr<Graph> embed =
      testing::dense_model("embed", {3, 4}, 6, {1, 6}, "Tanh", 2);
  static const std::shared_ptr<Graph> classify =
      testing::dense_model("classify", {4, 6}, 3, {1, 3}, "Sigmoid", 3);
  return {make_pipeline("audio",
                        [&](StreamBuilder& p) {
                          p.model("features", 1, 1, 2, features);
                          p.model("embed", 1, 3, 1, embed);
                          p.model("classify", 2, 4, 1, classify);
                        }),
          "<audio>"};
}

std::vector<Tensor> items(int count) {
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) {
    Tensor t = Tensor::allocate(DataType::kFloat, {16});
    for (int j = 0; j < 16; ++j) t.data<float>()[j] = 0.01f * static_cast<float>(i * 16 + j);
    out.push_back(std::move(t));
  }
  return out;
}

TEST(StreamPlanner, PlacementNamesAreTheRegistrysStreamFamily) {
  EXPECT_EQ(stream_planner_names(), (std::vector<std::string>{"balanced", "greedy", "contiguous"}));
  for (const std::string& name : stream_planner_names()) {
    EXPECT_EQ(placement_method_name(parse_placement_method(name)), name);
  }
}

TEST(StreamPlanner, PlansByTheGivenFiringCosts) {
  const StreamProgram program = three_models();
  const std::vector<Tensor> inputs = items(8);
  StreamRunOptions options = testing::on_workers(2);
  options.firing_seconds = {4e-3, 1e-3, 3e-3};
  options.handoff_seconds = 0;
  options.handoff_seconds_per_byte = 0;
  const StreamPlan plan = plan_stream(program, prepare_stream(program, inputs, false), options);
  EXPECT_EQ(plan.workers, 2);
  // Steady state: features once, embed twice, classify once.
  EXPECT_EQ(plan.node_cost, (std::vector<double>{4e-3, 2e-3, 3e-3}));
  EXPECT_NE(plan.placement.worker[0], plan.placement.worker[1]);
  EXPECT_EQ(plan.placement.worker[1], plan.placement.worker[2]);
}

// The executor computes no placement: what the plan says is where each node fires, even a
// placement no planner would choose (every node on the second worker).
TEST(StreamPlanner, ExecutorFiresEachNodeWhereThePlanPutsIt) {
  const StreamProgram program = three_models();
  const std::vector<Tensor> inputs = items(8);
  StreamRunOptions options = testing::on_workers(2);
  options.firing_seconds = {4e-3, 1e-3, 3e-3};
  options.trace = true;
  const StreamSetup setup = prepare_stream(program, inputs, false);
  StreamPlan plan = plan_stream(program, setup, options);
  plan.placement.worker = {1, 1, 1};
  const StreamRunResult r = execute_stream(program, setup, inputs, plan, options);
  EXPECT_EQ(r.placement, (std::vector<int>{1, 1, 1}));
  ASSERT_FALSE(r.firings.empty());
  for (const StreamRunResult::Firing& f : r.firings) EXPECT_EQ(f.worker, 1);
}

TEST(StreamPlanner, ExecutorRefusesAPlanForAnotherProgram) {
  const StreamProgram program = three_models();
  const std::vector<Tensor> inputs = items(8);
  const StreamSetup setup = prepare_stream(program, inputs, false);
  StreamPlan plan;
  plan.workers = 2;
  plan.placement.worker = {0, 1};
  try {
    execute_stream(program, setup, inputs, plan, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("<audio>: the plan places 2 nodes on 2 workers; the "
                                    "program has 3 nodes"));
  }
}

TEST(StreamPlanner, GivenPlacementOutsideTheWorkersIsRefusedNamingTheNode) {
  const StreamProgram program = three_models();
  const std::vector<Tensor> inputs = items(8);
  StreamRunOptions options = testing::on_workers(2, {0, 2, 1});
  options.firing_seconds = {1e-3, 1e-3, 1e-3};
  try {
    plan_stream(program, prepare_stream(program, inputs, false), options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("node \"embed\" placed on worker 2 of 2"));
  }
}

}  // namespace
}  // namespace cleave
