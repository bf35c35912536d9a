// With a machine file, every family of auto's table plans on its devices (speeds, threads),
// not on --workers x --threads-per-worker.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "../spatial/split_testing.h"
#include "frontend/stage_plan.h"
#include "machine/machine.h"
#include "pipeline/family_search.h"
#include "pipeline/plan_and_run.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Two branches of two convolutions each, joined: work for two devices.
Graph two_branches() {
  return testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,4,16,16]) {
  @w1: f32[4,4,3,3]
  @w2: f32[4,4,3,3]
  @w3: f32[4,4,3,3]
  @w4: f32[4,4,3,3]
  %a1: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %a2: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a1, @w2)
  %b1: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w3)
  %b2: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b1, @w4)
  %y: f32[1,4,16,16] = Add(%a2, %b2)
  return %y
})");
}

// A machine file of two one-thread devices, "left" at `left_speed`, "right" at 1.
Machine two_devices(double left_speed) {
  return machine_from_json(nlohmann::json::parse(R"({
    "name": "two",
    "devices": [
      {"name": "left", "kind": "cpu", "speed": )" +
                                                 std::to_string(left_speed) +
                                                 R"(, "threads": 1},
      {"name": "right", "kind": "cpu", "speed": 1.0, "threads": 1}
    ],
    "bandwidth": [[0, 2e10], [2e10, 0]],
    "latency": [[0, 2e-6], [2e-6, 0]]
  })"),
                           "two.json");
}

// Auto with fixed (static) costs on the machine, no timed check and no split: the plan's table.
PreparedRun planned_on(const Machine& machine) {
  RunRecipe recipe;
  recipe.strategy = "auto";
  recipe.layouts = "blocked";
  recipe.costs = "static";
  recipe.workers = 3;  // not the machine's count: the machine decides
  recipe.machine = machine;
  recipe.auto_check = false;
  recipe.offer_spatial = false;
  return prepare_run(two_branches(), recipe);
}

TEST(MachineFamilies, EveryRowOfTheTableIsPlannedOnTheMachinesDevices) {
  const PreparedRun prepared = planned_on(two_devices(1.0));
  ASSERT_TRUE(prepared.plan);
  const std::string table = candidate_table_text(*prepared.plan);
  EXPECT_THAT(table, HasSubstr("all on device 0 'left'"));
  EXPECT_THAT(table, HasSubstr("lc, 2 devices"));
  EXPECT_THAT(table, HasSubstr("heft, 2 devices"));
  EXPECT_THAT(table, Not(HasSubstr("workers x")));
  EXPECT_THAT(table, Not(HasSubstr("3 workers")));
  ASSERT_EQ(prepared.plan->tasks.machine.size(), 2u);
  EXPECT_EQ(prepared.plan->tasks.machine.devices[1].name, "right");
}

TEST(MachineFamilies, ASlowFirstDeviceSendsEveryTaskToTheFastOne) {
  const PreparedRun prepared = planned_on(two_devices(0.1));
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->family, "heterogeneous") << candidate_table_text(*prepared.plan);
  for (const auto& placement : prepared.plan->plan.tasks) EXPECT_EQ(placement.worker, 1);
}

TEST(MachineFamilies, DevicesOfTwoThreadsRunTwoThreadsPerWorker) {
  Machine machine = two_devices(1.0);
  for (Device& device : machine.devices) device.threads = 2;
  const PreparedRun prepared = planned_on(machine);
  ASSERT_NE(prepared.parallel, nullptr);
  EXPECT_EQ(prepared.parallel->threads_per_worker(), 2);
}

// Twelve Relus, the same static cost each.
Graph relu_chain() {
  std::string text = "graph main [ai.onnx=17] (%x: f32[1,64]) {\n";
  std::string last = "x";
  for (int n = 0; n < 12; ++n) {
    const std::string next = n == 11 ? "y" : "r" + std::to_string(n);
    text += "  %" + next + ": f32[1,64] = Relu(%" + last + ")\n";
    last = next;
  }
  return testing::graph_with_weights(text + "  return %y\n}\n");
}

// A stream of 32 samples on a full-speed and a half-speed device: auto's own plan is the
// stages, two thirds of the chain on the full-speed device, and the run computes what one
// sequential executor computes for every sample.
TEST(MachineFamilies, AStreamOnAHalfSpeedDeviceRunsAutosStages) {
  RunRecipe recipe;
  recipe.strategy = "auto";
  recipe.layouts = "blocked";
  recipe.costs = "static";
  recipe.machine = two_devices(1.0);
  recipe.machine->devices[1].speed = 0.5;
  recipe.samples = 32;
  recipe.auto_check = false;
  recipe.offer_spatial = false;
  recipe.inputs = [](const Graph& graph, int sample) { return random_inputs(graph, sample); };
  PreparedRun prepared = prepare_run(relu_chain(), recipe);
  ASSERT_TRUE(prepared.plan);
  EXPECT_EQ(prepared.plan->family, "pipeline") << candidate_table_text(*prepared.plan);
  EXPECT_EQ(prepared.plan->plan.notes["stage_nodes"], nlohmann::json({8, 4}));
  int pipeline_rows = 0;
  for (const PlanCandidate& row : prepared.plan->candidates)
    pipeline_rows += row.family == "pipeline";
  EXPECT_EQ(pipeline_rows, 1) << candidate_table_text(*prepared.plan);
  ASSERT_NE(prepared.parallel, nullptr);
  const std::vector<std::vector<Tensor>> outputs = prepared.executor->run(prepared.inputs);
  ASSERT_EQ(outputs.size(), 32u);
  Executor sequential(prepared.graph, ExecutorOptions{});
  for (std::size_t s = 0; s < outputs.size(); ++s) {
    const std::vector<Tensor> expected = sequential.run(prepared.inputs[s]);
    ASSERT_EQ(outputs[s].size(), expected.size());
    EXPECT_EQ(outputs[s][0].to_double_vector(), expected[0].to_double_vector()) << "sample " << s;
  }
}

// The candidate table's pipeline row on a machine file is the stage plan's simulated makespan,
// with the weights of each stage on its device.
TEST(MachineFamilies, ThePipelineRowIsTheStagePlansPrediction) {
  const Graph graph = two_branches();
  const CostTable costs = static_costs(graph);
  ModelPlanOptions options;
  options.machine = two_devices(1.0);
  options.machine->latency = {{0, 0.5}, {0.5, 0}};
  options.samples = 4;
  const PlanCandidate row = pipeline_candidate(graph, costs, options);
  EXPECT_TRUE(row.rejected.empty()) << row.rejected;
  const ModelPlan plan = best_stage_plan(graph, costs, *options.machine, 4);
  EXPECT_DOUBLE_EQ(row.predicted_seconds, plan.plan.makespan);
  EXPECT_EQ(row.configuration, plan.configuration);
  EXPECT_GT(row.predicted_seconds, 1.0) << "the hand-offs at 0.5 s a message";
  ASSERT_EQ(row.memory_bytes.size(), 2u);
  EXPECT_GT(row.memory_bytes[0], 0);
  EXPECT_GT(row.memory_bytes[1], 0);
}

}  // namespace
}  // namespace cleave
