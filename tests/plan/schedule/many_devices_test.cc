// HEFT and greedy on machines of 1,000 devices past --time-limit (their times: the slow test).
#include <gtest/gtest.h>

#include "plan/random_task_graph.h"
#include "plan/schedule/greedy.h"
#include "plan/schedule/heft.h"
#include "planner_checks.h"

namespace cleave {
namespace {

using testing::expect_consistent;

TaskGraph thousand_devices() {
  return random_task_graph(7, {.tasks = 200, .devices = 1000, .edge_probability = 0.05});
}

TEST(ManyDevices, HeftPastItsTimeLimitFinishesCheaplyAndSaysSo) {
  const TaskGraph graph = thousand_devices();
  const Plan plan = plan_heft(graph, {.time_limit_seconds = 1e-9});
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.notes.value("time_limit_reached", false), true);
  EXPECT_EQ(plan.notes.value("fallback_tasks", 0), 200);
}

TEST(ManyDevices, GreedyPastItsTimeLimitFinishesCheaplyAndSaysSo) {
  const TaskGraph graph = thousand_devices();
  const Plan plan = plan_greedy(graph, {.time_limit_seconds = 1e-9});
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.notes.value("fallback_tasks", 0), 200);
}

}  // namespace
}  // namespace cleave
