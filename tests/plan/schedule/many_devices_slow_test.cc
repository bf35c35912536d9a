// HEFT and the lower bound on 1,000 devices in bounded time: wall-clock checks, so they run in
// the Release suite only (the slow label), never under the sanitizers.
#include <gtest/gtest.h>

#include <ctime>

#include "plan/random_task_graph.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/lower_bound.h"
#include "planner_checks.h"

namespace cleave {
namespace {

using testing::expect_consistent;

// CPU seconds of this process since `start`: what the planners spend, whatever else the host
// runs (a wall-clock bound failed under a load of 8 on 2 cores).
double cpu_seconds_since(std::clock_t start) {
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

TaskGraph thousand_devices() {
  return random_task_graph(7, {.tasks = 200, .devices = 1000, .edge_probability = 0.05});
}

TEST(ManyDevices, HeftPlansAThousandDevicesQuickly) {
  const TaskGraph graph = thousand_devices();
  const std::clock_t began = std::clock();
  const Plan plan = plan_heft(graph);
  // Mean edge costs over every device pair per edge took seconds here; one pass takes ms.
  EXPECT_LT(cpu_seconds_since(began), 2.0);
  expect_consistent(plan, graph);
  EXPECT_FALSE(plan.notes.contains("time_limit_reached"));
}

TEST(ManyDevices, LowerBoundStaysWithinItsTimeLimit) {
  const TaskGraph graph = thousand_devices();
  LowerBoundOptions options;
  options.time_limit_seconds = 0.5;
  options.subproblem.time_limit_seconds = 0.5;
  options.subproblem.verbosity = 0;
  const std::clock_t began = std::clock();
  const LowerBoundResult bound = makespan_lower_bound(graph, options);
  // Before the bound kept its LP within the limit it took 10.3 s here (Release).
  EXPECT_LT(cpu_seconds_since(began), 8.0);
  EXPECT_GT(bound.makespan, 0);
  EXPECT_LE(bound.makespan, plan_heft(graph).makespan * (1 + 1e-9));
}

}  // namespace
}  // namespace cleave
