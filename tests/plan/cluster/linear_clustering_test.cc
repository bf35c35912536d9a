// Ramiel's linear clustering (Alg. 1), merging (Alg. 2–3), cloning and hyperclustering.
#include "plan/cluster/linear_clustering.h"

#include <gtest/gtest.h>

#include "machine/machine.h"
#include "plan/cluster/cloning.h"
#include "plan/cluster/hypercluster.h"
#include "plan/simulator.h"

namespace cleave {
namespace {

// Hand-drawn: a main chain r→m→n→z, an early side chain r→e1→e2→z, and a late sink n→l.
//
//   distance_to_end (no edge costs): r 4, m 3, n 2, z 1, e1 3, e2 2, l 0.5
TaskGraph hand_drawn() {
  TaskGraph graph;
  graph.machine = cpu_machine(2, 1);
  graph.machine.latency = {{0, 0}, {0, 0}};  // Free transfers keep the distances whole numbers.
  auto add = [&](const char* name, double time) {
    Task task;
    task.name = name;
    task.time = {time, time};
    graph.tasks.push_back(task);
    return static_cast<int>(graph.tasks.size() - 1);
  };
  int r = add("r", 1), m = add("m", 1), n = add("n", 1), z = add("z", 1);
  int e1 = add("e1", 1), e2 = add("e2", 1), l = add("l", 0.5);
  graph.edges = {{r, m}, {m, n}, {n, z}, {r, e1}, {e1, e2}, {e2, z}, {n, l}};
  return graph;
}

TEST(LinearClustering, DistanceToEndIsTheLongestPathToAnExit) {
  std::vector<double> distance = distance_to_end(hand_drawn());
  EXPECT_EQ(distance, (std::vector<double>{4, 3, 2, 1, 3, 2, 0.5}));
}

TEST(LinearClustering, Algorithm1PeelsCriticalPathsInTurn) {
  TaskGraph graph = hand_drawn();
  Clusters clusters = linear_clusters(graph, distance_to_end(graph));
  // r ties m and e1 at distance 3 and takes the lower id; then e1→e2 ends where z is taken.
  EXPECT_EQ(clusters, (Clusters{{0, 1, 2, 3}, {4, 5}, {6}}));
}

TEST(LinearClustering, Algorithm2MergesClustersWhoseSpansDoNotOverlap) {
  TaskGraph graph = hand_drawn();
  std::vector<double> distance = distance_to_end(graph);
  Clusters clusters = linear_clusters(graph, distance);
  // Spans: main chain [1,4], {e1,e2} [2,3], {l} [0.5,0.5]. Scanning in order, the main chain
  // overlaps {e1,e2} but not {l}, so those two merge first; {e1,e2} is left alone.
  EXPECT_TRUE(merge_clusters_once(clusters, distance));
  EXPECT_EQ(clusters, (Clusters{{0, 1, 2, 3, 6}, {4, 5}}));
  EXPECT_FALSE(merge_clusters_once(clusters, distance));
}

TEST(LinearClustering, Algorithm3StopsAtAFixedPoint) {
  TaskGraph graph = hand_drawn();
  std::vector<double> distance = distance_to_end(graph);
  EXPECT_EQ(merge_clusters(linear_clusters(graph, distance), distance).size(), 2u);
}

TEST(LinearClustering, PlanPutsTheTwoClustersOnTwoWorkers) {
  TaskGraph graph = hand_drawn();
  Plan plan = plan_linear_clustering(graph);
  validate_plan(plan, graph);
  EXPECT_EQ(plan.notes["clusters_before_merge"], 3);
  EXPECT_EQ(plan.notes["clusters_after_merge"], 2);
  EXPECT_EQ(plan.tasks[0].worker, 0);  // The critical cluster stays on worker 0.
  EXPECT_NE(plan.tasks[4].worker, plan.tasks[0].worker);
  EXPECT_DOUBLE_EQ(simulate(plan, graph).makespan, plan.makespan);
  // Main chain (4 units) plus l (0.5) on worker 0; e1, e2 beside them on worker 1.
  EXPECT_DOUBLE_EQ(plan.makespan, 4.5);
}

TEST(Cloning, NeverLengthensThePlanAndStaysValid) {
  TaskGraph graph = hand_drawn();
  Plan base = plan_linear_clustering(graph);
  PlannedTasks cloned = plan_with_cloning(graph, base);
  validate_plan(cloned.plan, cloned.tasks);
  EXPECT_LE(cloned.plan.makespan, base.makespan + 1e-12);
  EXPECT_GE(cloned.tasks.tasks.size(), graph.tasks.size());
}

TEST(Cloning, CopiesACheapForkWhoseOutputCrossesWorkers) {
  // A cheap producer p feeds two heavy consumers; with a transfer cost, cloning p onto the
  // second consumer's worker removes the wait for the transfer.
  TaskGraph graph;
  graph.machine = cpu_machine(2, 1);
  graph.machine.bandwidth = {{0, 1e3}, {1e3, 0}};
  graph.machine.latency = {{0, 0}, {0, 0}};
  auto add = [&](const char* name, double time, double bytes) {
    Task task;
    task.name = name;
    task.time = {time, time};
    task.output_bytes = bytes;
    graph.tasks.push_back(task);
  };
  add("source", 0.01, 0);  // Free input reader: nothing to transfer.
  add("p", 0.01, 1000);    // 1 s to transfer, 0.01 s to recompute.
  add("a", 2, 0);
  add("b", 2, 0);
  graph.edges = {{0, 1}, {1, 2}, {1, 3}};
  Plan base = plan_linear_clustering(graph);
  PlannedTasks cloned = plan_with_cloning(graph, base);
  validate_plan(cloned.plan, cloned.tasks);
  EXPECT_EQ(cloned.plan.notes["clones"], 1);
  EXPECT_LT(cloned.plan.makespan, base.makespan - 0.5);
}

TEST(Hypercluster, ReplicatesTasksPerSample) {
  TaskGraph per_sample = hand_drawn();
  TaskGraph all = replicate_for_samples(per_sample, 3);
  EXPECT_EQ(all.tasks.size(), 21u);
  EXPECT_EQ(all.edges.size(), 21u);
  EXPECT_EQ(all.tasks[7].name, "r@1");
  EXPECT_EQ(all.tasks[7].batch_begin, 1);
  EXPECT_EQ(all.tasks[7].batch_end, 2);
}

TEST(Hypercluster, SwitchedIsNeverSlowerThanPlain) {
  TaskGraph per_sample = hand_drawn();
  HyperclusterOptions options;
  options.samples = 2;
  PlannedTasks plain = plan_hypercluster(per_sample, options);
  options.switched = true;
  PlannedTasks switched = plan_hypercluster(per_sample, options);
  validate_plan(plain.plan, plain.tasks);
  validate_plan(switched.plan, switched.tasks);
  EXPECT_LE(switched.plan.makespan, plain.plan.makespan + 1e-12);
  // Two samples on two workers beat running them back to back on one (2 x 6.5 units).
  EXPECT_LT(plain.plan.makespan, 13.0);
}

}  // namespace
}  // namespace cleave
