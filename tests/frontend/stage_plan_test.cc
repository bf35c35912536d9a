// Pipelined stages as a task plan on a machine file's devices (MPI ranks): a stage per device,
// balanced at each device's speed, each device its stage sample after sample, every hand-off
// priced by the one simulator, and auto's pipeline row.
#include "frontend/stage_plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <string>

#include "frontend/auto_search.h"
#include "ir/text.h"
#include "machine/machine.h"
#include "plan/simulator.h"

namespace cleave {
namespace {

// A chain of four convolutions: two stages of two on two devices.
Graph chain() {
  return parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,4,16,16]) {
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

// A chain of `length` Relus.
Graph relu_chain(int length) {
  std::string text = "graph main [ai.onnx=17] (%x: f32[1,64]) {\n";
  std::string last = "x";
  for (int n = 0; n < length; ++n) {
    const std::string next = n + 1 == length ? "y" : "r" + std::to_string(n);
    text += "  %" + next + ": f32[1,64] = Relu(%" + last + ")\n";
    last = next;
  }
  return parse_graph(text + "  return %y\n}\n");
}

// Every node `seconds` on one thread and on more, `weight_bytes` of weights, 64 output bytes.
CostTable fixed_costs(const Graph& graph, double seconds, double weight_bytes = 0) {
  CostTable table;
  table.source = "fixed";
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) {
    table.nodes[id].seconds = {seconds};
    table.nodes[id].output_bytes = 64;
    table.nodes[id].weight_bytes = weight_bytes;
  }
  return table;
}

// One-thread devices at `speeds`, every pair linked at 10 GB/s and `latency` s a message, each
// holding `memory` bytes.
Machine ranks(const std::vector<double>& speeds, double latency,
              double memory = std::numeric_limits<double>::infinity()) {
  const std::size_t n = speeds.size();
  Machine machine;
  machine.name = "ranks";
  for (std::size_t d = 0; d < n; ++d) {
    Device device;
    device.name = "rank" + std::to_string(d);
    device.speed = speeds[d];
    device.memory_bytes = memory;
    machine.devices.push_back(device);
  }
  machine.bandwidth.assign(n, std::vector<double>(n, 1e10));
  machine.latency.assign(n, std::vector<double>(n, latency));
  for (std::size_t d = 0; d < n; ++d) machine.bandwidth[d][d] = machine.latency[d][d] = 0;
  return machine;
}

// Auto's table, a row a line, for failure messages.
std::string candidate_rows(const ModelPlan& plan) {
  std::string out;
  for (const PlanCandidate& row : plan.candidates) {
    out += row.family + " | " + row.configuration + " | " + std::to_string(row.predicted_seconds) +
           " | " + (row.chosen ? "chosen" : row.rejected) + "\n";
  }
  return out;
}

Machine ranks(int devices, double latency) {
  return ranks(std::vector<double>(devices, 1.0), latency);
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

TEST(StagePlan, StageDevicesNamedTwiceOrMissingAreRefused) {
  const Graph graph = chain();
  for (const std::vector<int>& devices : {std::vector<int>{0, 0}, std::vector<int>{0, 2}}) {
    try {
      stage_plan(graph, static_costs(graph), ranks(2, 1e-6), 2, 2, devices);
      ADD_FAILURE() << "devices " << devices[0] << ", " << devices[1] << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the machine lacks"), std::string::npos) << e.what();
    }
  }
}

// Six equal nodes on a full-speed and a half-speed device: the cut gives the half-speed device
// a third of the nodes, so its stage has half the (speed 1) seconds of the other and both take
// the same time on their own device. Either order of the devices.
TEST(StagePlan, AHalfSpeedDeviceGetsAboutHalfTheWork) {
  const Graph graph = relu_chain(6);
  const CostTable costs = fixed_costs(graph, 1e-3);
  for (const std::vector<double>& speeds : {std::vector<double>{1.0, 0.5}, {0.5, 1.0}}) {
    const ModelPlan plan = stage_plan(graph, costs, ranks(speeds, 1e-6), 2, 8);
    const std::vector<int64_t> nodes = plan.plan.notes["stage_nodes"].get<std::vector<int64_t>>();
    const std::vector<double> on_device =
        plan.plan.notes["stage_seconds"].get<std::vector<double>>();
    const std::vector<int64_t> expected =
        speeds.front() == 1.0 ? std::vector<int64_t>{4, 2} : std::vector<int64_t>{2, 4};
    EXPECT_EQ(nodes, expected) << plan.plan.notes.dump();
    ASSERT_EQ(on_device.size(), 2u);
    EXPECT_NEAR(on_device[0], 4e-3, 1e-12);
    EXPECT_NEAR(on_device[1], 4e-3, 1e-12);
    // The half-speed device's stage, in seconds at speed 1, against the full-speed one's.
    std::map<int, double> reference;  // By worker, sample 0.
    for (const PlannedTask& placed : plan.plan.tasks) {
      const Task& task = plan.tasks.tasks[placed.task];
      if (task.batch_begin == 0) reference[placed.worker] += costs.seconds(task.node, 1);
    }
    const int half = speeds.front() == 0.5 ? 0 : 1;
    EXPECT_NEAR(reference[half] / reference[1 - half], 0.5, 0.1);
  }
}

// Unequal nodes: the cut is the one whose slowest stage, on its own device, is fastest.
TEST(StagePlan, TheCutMinimisesTheSlowestStageOnItsDevice) {
  const Graph graph = relu_chain(5);
  Machine machine = ranks({1.0, 0.25}, 1e-6);
  TaskGraph tasks = task_graph_for(graph, fixed_costs(graph, 1e-3), machine);
  // 1, 1, 1, 1, 4 ms at speed 1; the quarter-speed device takes 4x.
  for (Task& task : tasks.tasks) task.time = {1e-3, 4e-3};
  tasks.tasks.back().time = {4e-3, 16e-3};
  // On device 0 then 1: [4 nodes | the 16 ms one] is 16 ms; on device 1 then 0: [1 | 3 + 4]
  // is 7 ms on device 0, 4 ms on device 1.
  EXPECT_EQ(balanced_stage_nodes(tasks, {0, 1}), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(balanced_stage_nodes(tasks, {1, 0}), (std::vector<int64_t>{1, 4}));
}

// A long chain whose weights no one device holds, 32 samples on two equal ranks with fast
// links: neither sequential nor each rank its own samples fit, the stages do and are chosen.
// One sample has no stream to pipeline: no pipeline row, another plan chosen.
TEST(StagePlan, AutoPicksTheStagesForAStreamAndNotForOneSample) {
  const Graph graph = relu_chain(8);
  const CostTable costs = fixed_costs(graph, 1e-3, 16384);
  ModelPlanOptions options;
  options.machine = ranks({1.0, 1.0}, 1e-6, 5 * 16384 + 4096);
  options.samples = 32;
  const ModelPlan stream = plan_model(graph, costs, options);
  EXPECT_EQ(stream.family, "pipeline") << candidate_rows(stream);
  EXPECT_EQ(stream.configuration, "2 stages, one per device");
  EXPECT_EQ(stream.plan.batch, 32);
  int chosen = 0;
  for (const PlanCandidate& row : stream.candidates) {
    if (!row.chosen) continue;
    ++chosen;
    EXPECT_EQ(row.family, "pipeline");
    EXPECT_GT(row.samples_per_second, 0);
  }
  EXPECT_EQ(chosen, 1);
  // 32 samples of 4 ms per stage: the stream takes about 33 stage times.
  EXPECT_NEAR(stream.plan.makespan, 33 * 4e-3, 1e-3);

  options.samples = 1;
  const ModelPlan one = plan_model(graph, costs, options);
  EXPECT_NE(one.family, "pipeline");
  for (const PlanCandidate& row : one.candidates) EXPECT_NE(row.family, "pipeline");
}

// Each device its own samples leaves a half-speed rank half the stream; stages give it a third
// of the model and finish first.
TEST(StagePlan, AutoPicksTheStagesWhereARankRunsAtHalfSpeed) {
  const Graph graph = relu_chain(12);
  const CostTable costs = fixed_costs(graph, 1e-3);
  ModelPlanOptions options;
  options.machine = ranks({1.0, 0.5}, 1e-6);
  options.samples = 32;
  const ModelPlan plan = plan_model(graph, costs, options);
  EXPECT_EQ(plan.family, "pipeline") << candidate_rows(plan);
  EXPECT_EQ(plan.plan.notes["stage_nodes"], nlohmann::json({8, 4}));
}

// A chain of one node has no two stages: the row says why and auto plans without it.
TEST(StagePlan, AutoOnAModelOfOneNodeRejectsTheStagesRow) {
  const Graph graph = relu_chain(1);
  ModelPlanOptions options;
  options.machine = ranks(2, 1e-6);
  options.samples = 4;
  const ModelPlan plan = plan_model(graph, fixed_costs(graph, 1e-3), options);
  EXPECT_NE(plan.family, "pipeline");
  bool listed = false;
  for (const PlanCandidate& row : plan.candidates) {
    if (row.family != "pipeline") continue;
    listed = true;
    EXPECT_NE(row.rejected.find("two nodes or more"), std::string::npos) << row.rejected;
  }
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace cleave
