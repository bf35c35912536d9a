// Pipelined stages as a task plan on a machine file's devices (MPI ranks): a stage per device,
// each device its stage sample after sample, every hand-off priced by the one simulator.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "../spatial/split_testing.h"
#include "machine/machine.h"
#include "pipeline/family_search.h"
#include "pipeline/stage_plan.h"
#include "plan/simulator.h"

namespace cleave {
namespace {

// A chain of four convolutions: two stages of two on two devices.
Graph chain() {
  return testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,4,16,16]) {
  @w1: f32[4,4,3,3]
  @w2: f32[4,4,3,3]
  @w3: f32[4,4,3,3]
  @w4: f32[4,4,3,3]
  %a: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %b: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w2)
  %c: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @w3)
  %y: f32[1,4,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%c, @w4)
  return %y
})");
}

// `devices` one-thread devices whose links take `latency` seconds per message.
Machine ranks(int devices, double latency) {
  nlohmann::json json = {{"devices", nlohmann::json::array()}};
  nlohmann::json bandwidth = nlohmann::json::array(), latencies = nlohmann::json::array();
  for (int d = 0; d < devices; ++d) {
    json["devices"].push_back({{"name", "rank" + std::to_string(d)}, {"threads", 1}});
    nlohmann::json b = nlohmann::json::array(), l = nlohmann::json::array();
    for (int e = 0; e < devices; ++e) {
      b.push_back(d == e ? 0.0 : 1e10);
      l.push_back(d == e ? 0.0 : latency);
    }
    bandwidth.push_back(b);
    latencies.push_back(l);
  }
  json["bandwidth"] = bandwidth;
  json["latency"] = latencies;
  return machine_from_json(json, "ranks.json");
}

TEST(StagePlan, EachDeviceRunsItsStageSampleAfterSample) {
  const Graph graph = chain();
  const ModelPlan plan = stage_plan(graph, static_costs(graph), ranks(2, 1e-6), 2, 3);
  EXPECT_EQ(plan.family, "pipeline");
  EXPECT_EQ(plan.plan.batch, 3);
  ASSERT_EQ(plan.plan.order.size(), 2u);
  // Two nodes per stage, three samples each.
  for (const auto& order : plan.plan.order) {
    ASSERT_EQ(order.size(), 6u);
    for (std::size_t i = 1; i < order.size(); ++i) {
      EXPECT_LE(plan.tasks.tasks[order[i - 1]].batch_begin, plan.tasks.tasks[order[i]].batch_begin)
          << "a device finishes a sample's stage before the next sample's";
    }
  }
  // The first node is the first stage's, the last node the second stage's.
  const NodeId first = graph.consumers(graph.inputs().front()).front();
  const NodeId last = graph.value(graph.outputs().front()).producer;
  for (const PlannedTask& placed : plan.plan.tasks) {
    const int node = plan.tasks.tasks[placed.task].node;
    if (node == first) {
      EXPECT_EQ(placed.worker, 0);
    }
    if (node == last) {
      EXPECT_EQ(placed.worker, 1);
    }
  }
  // Pipelined: the second device works on sample 0 while the first works on sample 1, so the
  // stream takes less than the two stages one sample at a time.
  double serial = 0;
  for (const Task& task : plan.tasks.tasks) serial += task.time.front();
  EXPECT_LT(plan.plan.makespan, serial);
  EXPECT_DOUBLE_EQ(plan.plan.makespan, simulate(plan.plan, plan.tasks).makespan);
}

// The one simulator prices the hand-off between the stages and rank 0's gather of the output
// from the last stage: at 1 s a message, one sample takes over 2 s.
TEST(StagePlan, HandOffsBetweenStagesArePriced) {
  const Graph graph = chain();
  const ModelPlan plan = stage_plan(graph, static_costs(graph), ranks(2, 1.0), 2, 1);
  EXPECT_GT(plan.plan.makespan, 2.0);
}

TEST(StagePlan, BestStagesUseAtMostTheDevicesAndStageCountsOutsideAreRefused) {
  const Graph graph = chain();
  const CostTable costs = static_costs(graph);
  const ModelPlan best = best_stage_plan(graph, costs, ranks(3, 1e-6), 4);
  EXPECT_EQ(best.plan.order.size(), 3u);
  EXPECT_GE(best.plan.notes["stage_nodes"].size(), 2u);
  EXPECT_LE(best.plan.notes["stage_nodes"].size(), 3u);
  for (int stages : {1, 3}) {
    try {
      stage_plan(graph, costs, ranks(2, 1e-6), stages, 2);
      ADD_FAILURE() << stages << " stages accepted on 2 devices";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected 2 to 2 stages"), std::string::npos)
          << e.what();
    }
  }
  try {
    best_stage_plan(graph, costs, ranks(1, 1e-6), 2);
    ADD_FAILURE() << "one device accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two devices or more"), std::string::npos) << e.what();
  }
}

// The candidate table's pipeline row on a machine file is the stage plan's simulated makespan.
TEST(StagePlan, MachineRowIsTheStagePlansPrediction) {
  const Graph graph = chain();
  const CostTable costs = static_costs(graph);
  ModelPlanOptions options;
  options.machine = ranks(2, 0.5);
  options.samples = 4;
  const PlanCandidate row = pipeline_candidate(graph, costs, options);
  EXPECT_TRUE(row.rejected.empty()) << row.rejected;
  EXPECT_DOUBLE_EQ(row.predicted_seconds,
                   best_stage_plan(graph, costs, *options.machine, 4).plan.makespan);
  EXPECT_GT(row.predicted_seconds, 1.0) << "the hand-offs at 0.5 s a message";
}

}  // namespace
}  // namespace cleave
