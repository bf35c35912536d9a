// The simulator: exact list scheduling of a plan's orders, transfers and deadlock detection.
#include "plan/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;
using ::testing::HasSubstr;

// a -> b, a -> c, b -> d, c -> d; 100 bytes per edge over 100 bytes/s (1 s) plus 0.5 s latency.
const char* const kDiamond = R"({
  "devices": [{"name": "p"}, {"name": "q"}],
  "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],
  "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 100},
            {"name": "b", "time": [2, 2], "output_bytes": 100},
            {"name": "c", "time": [3, 3], "output_bytes": 100},
            {"name": "d", "time": [1, 1]}],
  "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]
})";

Plan make_plan(const std::vector<int>& workers, const std::vector<std::vector<int>>& order) {
  Plan plan;
  for (std::size_t task = 0; task < workers.size(); ++task) {
    plan.tasks.push_back(PlannedTask{static_cast<int>(task), workers[task], 0, 0});
  }
  plan.order = order;
  return plan;
}

TEST(SimulatorTest, OneWorkerRunsTasksBackToBack) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const Simulation result = simulate(make_plan({0, 0, 0, 0}, {{0, 2, 1, 3}, {}}), graph);
  EXPECT_EQ(result.start, (std::vector<double>{0, 4, 1, 6}));
  EXPECT_EQ(result.makespan, 7);
  EXPECT_EQ(result.busy, (std::vector<double>{7, 0}));
  EXPECT_EQ(result.idle, (std::vector<double>{0, 7}));
  EXPECT_EQ(result.transfer_count, 0);
}

TEST(SimulatorTest, InputFromAnotherWorkerArrivesAfterLatencyAndBandwidth) {
  const TaskGraph graph = graph_from_text(kDiamond);
  // c on q: a finishes at 1, its data reaches q at 1 + 0.5 + 1 = 2.5; c runs 2.5-5.5; its
  // output reaches p at 7; b ran 1-3 on p, so d runs 7-8.
  const Simulation result = simulate(make_plan({0, 0, 1, 0}, {{0, 1, 3}, {2}}), graph);
  EXPECT_DOUBLE_EQ(result.start[2], 2.5);
  EXPECT_DOUBLE_EQ(result.finish[2], 5.5);
  EXPECT_DOUBLE_EQ(result.start[3], 7);
  EXPECT_DOUBLE_EQ(result.makespan, 8);
  EXPECT_EQ(result.transfer_count, 2);
  EXPECT_EQ(result.transfer_bytes, 200);
  EXPECT_DOUBLE_EQ(result.busy[1], 3);
  EXPECT_DOUBLE_EQ(result.idle[1], 5);
}

TEST(SimulatorTest, WorkerWaitsForItsPreviousTaskEvenWhenInputsAreReady) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "p"}],
    "tasks": [{"name": "long", "time": [5]}, {"name": "short", "time": [1]}]})");
  const Simulation result = simulate(make_plan({0, 0}, {{0, 1}}), graph);
  EXPECT_EQ(result.start[1], 5);
}

TEST(SimulatorTest, DetectsADeadlockingOrder) {
  const TaskGraph graph = graph_from_text(kDiamond);
  try {
    simulate(make_plan({0, 0, 0, 0}, {{0, 3, 1, 2}, {}}), graph);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("deadlock"));
    EXPECT_THAT(e.what(), HasSubstr("\"d\" on p"));
  }
}

TEST(SimulatorTest, ApplySimulationCopiesTimesIntoThePlan) {
  const TaskGraph graph = graph_from_text(kDiamond);
  Plan plan = make_plan({0, 0, 1, 0}, {{0, 1, 3}, {2}});
  apply_simulation(plan, simulate(plan, graph));
  EXPECT_DOUBLE_EQ(plan.tasks[3].start, 7);
  EXPECT_DOUBLE_EQ(plan.makespan, 8);
}

TEST(SimulatorTest, EmptyGraphHasZeroMakespan) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "p"}], "tasks": []})");
  EXPECT_EQ(simulate(make_plan({}, {{}}), graph).makespan, 0);
}

}  // namespace
}  // namespace cleave
