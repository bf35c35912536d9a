// Batched task graphs: slices of B, scaled times and bytes, shared weights, throughput plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::expect_consistent;
using testing::graph_from_text;
using ::testing::HasSubstr;

const char* const kPair = R"({
  "devices": [{"name": "cpu"}, {"name": "gpu", "memory_bytes": 1000}],
  "bandwidth": [[0, 1e6], [1e6, 0]],
  "tasks": [{"name": "conv", "time": [0.004, 0.001], "output_bytes": 100, "weight_bytes": 600},
            {"name": "fc", "time": [0.002, 0.001], "output_bytes": 10, "weight_bytes": 300}],
  "edges": [["conv", "fc"]]
})";

TEST(BatchTaskGraphTest, SlicesEveryTaskAndScalesTimesLinearly) {
  const TaskGraph batched = batch_task_graph(graph_from_text(kPair), 8, {2, 2, 4});
  ASSERT_EQ(batched.tasks.size(), 6u);
  EXPECT_EQ(batched.tasks[0].name, "conv@0:2");
  EXPECT_EQ(batched.tasks[2].name, "conv@4:8");
  EXPECT_EQ(batched.tasks[2].batch_begin, 4);
  EXPECT_EQ(batched.tasks[2].batch_end, 8);
  EXPECT_DOUBLE_EQ(batched.tasks[2].time[0], 0.016);
  EXPECT_DOUBLE_EQ(batched.tasks[1].time[1], 0.002);
  EXPECT_EQ(batched.tasks[2].output_bytes, 400);
  EXPECT_EQ(batched.tasks[2].weight_bytes, 600);
}

TEST(BatchTaskGraphTest, EdgesJoinMatchingSlices) {
  const TaskGraph batched = batch_task_graph(graph_from_text(kPair), 4, {1, 3});
  EXPECT_EQ(batched.edges, (std::vector<std::pair<int, int>>{{0, 2}, {1, 3}}));
  EXPECT_NO_THROW(batched.check("batched"));
}

TEST(BatchTaskGraphTest, SlicesOfOneTaskShareTheirWeights) {
  const TaskGraph batched = batch_task_graph(graph_from_text(kPair), 4, {2, 2});
  EXPECT_EQ(batched.tasks[0].weight_group, batched.tasks[1].weight_group);
  EXPECT_NE(batched.tasks[0].weight_group, batched.tasks[2].weight_group);
  // Both conv slices on the gpu: 600 bytes once, not twice.
  EXPECT_EQ(weight_bytes_per_worker(batched, {1, 1, 0, 0})[1], 600);
}

TEST(BatchTaskGraphTest, UnsupportedSliceSizeCannotRunThere) {
  TaskGraph graph = graph_from_text(kPair);
  graph.machine.devices[1].batch_sizes = {1, 2};
  const TaskGraph batched = batch_task_graph(graph, 6, {2, 4});
  EXPECT_DOUBLE_EQ(batched.tasks[0].time[1], 0.002);
  EXPECT_TRUE(std::isinf(batched.tasks[1].time[1]));
}

TEST(BatchTaskGraphTest, RefusesSlicesThatDoNotAddUpToTheBatch) {
  try {
    batch_task_graph(graph_from_text(kPair), 8, {2, 2});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("slice sizes 2+2 add up to 4, not the batch 8"));
  }
}

TEST(BatchTaskGraphTest, RefusesASliceNoDeviceSupports) {
  TaskGraph graph = graph_from_text(kPair);
  graph.machine.devices[0].batch_sizes = {1};
  graph.machine.devices[1].batch_sizes = {1};
  EXPECT_THROW(batch_task_graph(graph, 4, {4}), Error);
}

TEST(BatchTaskGraphTest, DefaultSlicesArePapersQuarters) {
  EXPECT_EQ(default_slice_sizes(128), (std::vector<int64_t>{32, 32, 32, 32}));
  EXPECT_EQ(default_slice_sizes(6), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(default_slice_sizes(3), (std::vector<int64_t>{3}));
  EXPECT_THROW(default_slice_sizes(0), Error);
}

// Data parallelism: two slices of equal work on two identical devices run side by side.
TEST(BatchPlanningTest, HeftSplitsABatchAcrossIdenticalDevices) {
  const TaskGraph per_sample = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1e9], [1e9, 0]],
    "tasks": [{"name": "a", "time": [1, 1]}]})");
  const TaskGraph batched = batch_task_graph(per_sample, 4, {2, 2});
  const Plan plan = plan_heft(batched);
  expect_consistent(plan, batched);
  EXPECT_DOUBLE_EQ(plan.makespan, 2);
  EXPECT_NE(plan.tasks[0].worker, plan.tasks[1].worker);
}

TEST(BatchPlanningTest, EveryPlannerSchedulesABatchedGraph) {
  const TaskGraph batched = batch_task_graph(graph_from_text(kPair), 8, default_slice_sizes(8));
  for (const std::string& name : testing::kPlanners) {
    const Plan plan = testing::run_planner(name, batched);
    expect_consistent(plan, batched);
    // The gpu memory (1000 bytes) holds conv's and fc's weights (900) once, not per slice.
    EXPECT_LE(weight_bytes_per_worker(batched,
                                      [&] {
                                        std::vector<int> workers;
                                        for (const PlannedTask& placed : plan.tasks)
                                          workers.push_back(placed.worker);
                                        return workers;
                                      }())[1],
              1000)
        << name;
  }
}

}  // namespace
}  // namespace cleave
