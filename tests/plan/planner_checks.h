// Test helpers: run any planner by name with repeatable settings and check its plan.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/registry.h"
#include "plan/schedule/annealing.h"
#include "plan/schedule/evolution.h"
#include "plan/schedule/greedy.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/met.h"
#include "plan/simulator.h"

namespace cleave::testing {

/// The heuristic planners the hand-computed cases of planners_test.cc cover; the exact solvers
/// (milp, milp-split) have tests of their own. registry_test.cc checks that every registered
/// heterogeneous planner is in one of the two lists.
inline const std::vector<std::string> kPlanners = {"met", "greedy", "heft", "annealing",
                                                   "evolution"};
inline const std::vector<std::string> kExactPlanners = {"milp", "milp-split"};

/// Runs a registered planner on one sample with iteration-limited (not time-limited)
/// searches, so results repeat.
inline Plan run_planner(const std::string& name, const TaskGraph& graph, uint64_t seed = 1,
                        int64_t iterations = 3000) {
  ScheduleOptions options;
  options.seed = seed;
  options.max_iterations = iterations;
  options.time_limit_seconds = 1e6;
  return find_planner(name).run(graph, 1, options).plan;
}

/// The plan validates, its times are the simulator's, and the planner's own estimate of the
/// makespan (notes.planner_makespan) equals the simulated one.
inline void expect_consistent(const Plan& plan, const TaskGraph& graph) {
  ASSERT_NO_THROW(validate_plan(plan, graph)) << plan.strategy;
  const Simulation simulation = simulate(plan, graph);
  EXPECT_EQ(plan.makespan, simulation.makespan) << plan.strategy;
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    EXPECT_EQ(plan.tasks[task].start, simulation.start[task]) << plan.strategy << " task " << task;
    EXPECT_EQ(plan.tasks[task].finish, simulation.finish[task]) << plan.strategy;
  }
  ASSERT_TRUE(plan.notes.contains("planner_makespan")) << plan.strategy;
  EXPECT_DOUBLE_EQ(plan.notes["planner_makespan"].get<double>(), simulation.makespan)
      << plan.strategy;
}

}  // namespace cleave::testing
