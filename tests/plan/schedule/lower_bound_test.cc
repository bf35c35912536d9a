// Tests of the lower bound: never above a feasible plan, tight where the paper says it is.
#include "plan/schedule/lower_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "modular_graph.h"
#include "plan/random_task_graph.h"
#include "plan/schedule/milp.h"
#include "plan/schedule/milp_split.h"
#include "planner_checks.h"
#include "property_seeds.h"
#include "quiet_milp.h"

namespace cleave {
namespace {

using testing::modular_graph;
using testing::ModularGraphOptions;
using testing::quiet_milp;

LowerBoundOptions bound_options(int channels = 0) {
  LowerBoundOptions options;
  options.subproblem = quiet_milp();
  options.channels = channels;
  return options;
}

// Every planner's makespan on the graph; the exact MILP only on graphs small enough to be
// quick (it is what makes the bound's check sharp).
std::vector<std::pair<std::string, double>> makespans(const TaskGraph& graph) {
  std::vector<std::pair<std::string, double>> result;
  for (const std::string& name : testing::kPlanners) {
    result.push_back({name, testing::run_planner(name, graph, 1, 500).makespan});
  }
  if (graph.tasks.size() <= 12) result.push_back({"milp", plan_milp(graph, quiet_milp()).makespan});
  MilpSplitOptions split;
  split.module = quiet_milp();
  result.push_back({"milp-split", plan_milp_split(graph, split).makespan});
  return result;
}

void expect_below_every_plan(const TaskGraph& graph, const LowerBoundResult& bound) {
  for (const auto& [name, makespan] : makespans(graph)) {
    EXPECT_LE(bound.makespan, makespan * (1 + 1e-9)) << name;
  }
}

TEST(LowerBound, NeverAboveAnyPlanOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 15; seed += testing::kPropertySeedStep) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomTaskGraphOptions options;
    options.tasks = 4 + static_cast<int>(seed % 6);
    options.devices = 2 + static_cast<int>(seed % 2);
    options.edge_probability = 0.3;
    const TaskGraph graph = random_task_graph(seed, options);
    expect_below_every_plan(graph, makespan_lower_bound(graph, bound_options()));
  }
}

TEST(LowerBound, NeverAboveAnyPlanOnModularGraphs) {
  for (uint64_t seed = 1; seed <= 12; seed += testing::kPropertySeedStep) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    ModularGraphOptions options;
    options.channels = 1 + static_cast<int>(seed % 3);
    options.modules = options.channels == 1 ? 3 : 2;
    options.body = 2;
    options.edge_probability = 0.5;
    options.articulation = seed % 4 == 0;
    const TaskGraph graph = modular_graph(seed, options);
    const LowerBoundResult bound = makespan_lower_bound(graph, bound_options(options.channels));
    EXPECT_GE(bound.modules, 2);
    EXPECT_GE(bound.recursive, bound.critical_path * (1 - 1e-9));
    expect_below_every_plan(graph, bound);
  }
}

TEST(LowerBound, NeverAboveAnyPlanOnBatchedGraphs) {
  for (uint64_t seed = 1; seed <= 4; seed += testing::kPropertySeedStep) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    ModularGraphOptions options;
    options.modules = 2;
    options.body = 1;
    options.devices = 2;
    const TaskGraph batched = batch_task_graph(modular_graph(seed, options), 4, {2, 2});
    const LowerBoundResult bound = makespan_lower_bound(batched, bound_options());
    EXPECT_EQ(bound.objective, "throughput");
    EXPECT_EQ(bound.batch, 4);
    EXPECT_NEAR(bound.throughput, 4 / bound.makespan, 1e-9);
    expect_below_every_plan(batched, bound);
  }
}

TEST(LowerBound, IsTheOptimumForOneModule) {
  RandomTaskGraphOptions options;
  options.tasks = 7;
  options.edge_probability = 1.0;  // one dense module
  const TaskGraph graph = random_task_graph(21, options);
  const LowerBoundResult bound = makespan_lower_bound(graph, bound_options());
  EXPECT_EQ(bound.modules, 1);
  EXPECT_TRUE(bound.all_optimal);
  EXPECT_NEAR(bound.makespan, plan_milp(graph, quiet_milp()).makespan, 1e-9 * bound.makespan);
}

TEST(LowerBound, ClosedFormsAloneStayBelowPlans) {
  RandomTaskGraphOptions options;
  options.tasks = 9;
  const TaskGraph graph = random_task_graph(22, options);
  LowerBoundOptions closed = bound_options();
  closed.use_milp = false;
  const LowerBoundResult bound = makespan_lower_bound(graph, closed);
  EXPECT_EQ(bound.subproblems, 0);
  EXPECT_EQ(bound.recursive, 0);
  EXPECT_EQ(bound.makespan, std::max(bound.critical_path, bound.work));
  expect_below_every_plan(graph, bound);
}

TEST(LowerBound, WorkBoundSplitsTheLoadOverDevices) {
  // Four independent tasks of 1 s on two equal devices: at least 2 s.
  RandomTaskGraphOptions options;
  options.tasks = 4;
  options.devices = 2;
  options.edge_probability = 0;
  TaskGraph graph = random_task_graph(23, options);
  for (Task& task : graph.tasks) task.time = {1.0, 1.0};
  LowerBoundOptions closed = bound_options();
  closed.use_milp = false;
  EXPECT_NEAR(makespan_lower_bound(graph, closed).work, 2.0, 1e-6);
}

TEST(LowerBound, ATaskThatRunsNowhereIsAnError) {
  RandomTaskGraphOptions options;
  options.tasks = 3;
  options.devices = 2;
  TaskGraph graph = random_task_graph(24, options);
  graph.tasks[1].time = {INFINITY, INFINITY};
  EXPECT_THROW(makespan_lower_bound(graph, bound_options()), Error);
}

}  // namespace
}  // namespace cleave

namespace cleave {
namespace {

// A spent time limit stops the recursion: the bound is still the closed forms (valid, maybe
// weaker) and says it ran out, instead of running on past --time-limit.
TEST(LowerBoundTimeLimit, ASpentLimitReturnsTheClosedFormsAndSaysSo) {
  ModularGraphOptions options;
  options.modules = 4;
  options.body = 3;
  const TaskGraph graph = modular_graph(5, options);
  LowerBoundOptions limited = bound_options();
  limited.time_limit_seconds = 0;
  const LowerBoundResult cut = makespan_lower_bound(graph, limited);
  EXPECT_TRUE(cut.timed_out);
  EXPECT_EQ(cut.subproblems, 0);
  EXPECT_EQ(cut.makespan, std::max(cut.critical_path, cut.work));
  expect_below_every_plan(graph, cut);

  const LowerBoundResult full = makespan_lower_bound(graph, bound_options());
  EXPECT_FALSE(full.timed_out);
  EXPECT_GE(full.makespan, cut.makespan * (1 - 1e-9));
}

}  // namespace
}  // namespace cleave
