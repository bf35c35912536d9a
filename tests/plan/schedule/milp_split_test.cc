// Tests of MILP-SPLIT: module detection, optimality on single-channel chains, the other cases.
#include "plan/schedule/milp_split.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.h"
#include "modular_graph.h"
#include "plan/random_task_graph.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/milp.h"
#include "plan/schedule/modules.h"
#include "plan/simulator.h"
#include "property_seeds.h"
#include "quiet_milp.h"

namespace cleave {
namespace {

using testing::modular_graph;
using testing::ModularGraphOptions;
using testing::quiet_milp;

bool close(double a, double b, double relative = 1e-6) {
  return std::abs(a - b) <= relative * std::max({std::abs(a), std::abs(b), 1e-12});
}

ModularGraphOptions modules_of(int modules, int body, double edge_probability, int channels = 1) {
  ModularGraphOptions options;
  options.modules = modules;
  options.body = body;
  options.edge_probability = edge_probability;
  options.channels = channels;
  return options;
}

MilpSplitOptions quiet_split(int channels = 1) {
  MilpSplitOptions options;
  options.module = quiet_milp();
  options.channels = channels;
  return options;
}

TEST(Modules, BridgesCutAChainOfModules) {
  ModularGraphOptions options;
  options.modules = 3;
  options.body = 3;
  const TaskGraph graph = modular_graph(1, options);
  const ModuleSplit split = single_channel_modules(graph);
  ASSERT_TRUE(split.single_channel);
  // Each module: input, body, output; the bridge output -> next input joins them.
  ASSERT_EQ(split.modules.size(), 3u);
  ASSERT_EQ(split.joints.size(), 2u);
  for (std::size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(split.module_of_task[split.joints[t].producer], static_cast<int>(t));
    EXPECT_EQ(split.module_of_task[split.joints[t].consumer], static_cast<int>(t + 1));
  }
}

TEST(Modules, ArticulationPointsBecomeJointsWithACopy) {
  // Two diamonds sharing task 3: a -> {b, c} -> d -> {e, f} -> g.
  RandomTaskGraphOptions options;
  options.tasks = 7;
  TaskGraph graph = random_task_graph(2, options);
  graph.edges = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {3, 5}, {4, 6}, {5, 6}};
  const ModuleSplit split = single_channel_modules(graph);
  ASSERT_TRUE(split.single_channel);
  ASSERT_EQ(split.modules.size(), 2u);
  EXPECT_EQ(split.modules[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(split.modules[1], (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(split.joints[0].producer, 3);
  EXPECT_EQ(split.joints[0].consumer, -1);
}

TEST(Modules, ADenseGraphIsOneModule) {
  RandomTaskGraphOptions options;
  options.tasks = 8;
  options.edge_probability = 1.0;
  const ModuleSplit split = single_channel_modules(random_task_graph(3, options));
  EXPECT_EQ(split.modules.size(), 1u);
  EXPECT_FALSE(split.single_channel);
}

TEST(Modules, SideBranchesAreNotCuts) {
  // a -> b -> c and a -> d: a -> b is a bridge of the graph, but d may run after b, so it
  // does not split the graph into a chain.
  RandomTaskGraphOptions options;
  options.tasks = 4;
  TaskGraph graph = random_task_graph(4, options);
  graph.edges = {{0, 1}, {1, 2}, {0, 3}};
  EXPECT_EQ(single_channel_modules(graph).modules.size(), 1u);
}

TEST(Modules, MultiChannelComponentsFollowTheChannels) {
  ModularGraphOptions options;
  options.modules = 4;
  options.body = 6;
  options.edge_probability = 0.7;
  options.channels = 2;
  const TaskGraph graph = modular_graph(5, options);
  const ModuleSplit split = multi_channel_modules(graph, 2);
  EXPECT_GE(split.modules.size(), 3u);
  // Edges only go forward between the listed modules.
  for (const auto& [from, to] : graph.edges) {
    EXPECT_LE(split.module_of_task[from], split.module_of_task[to]);
  }
}

TEST(MilpSplit, EqualsMilpOnSingleChannelChains) {
  for (uint64_t seed = 1; seed <= 12; seed += testing::kPropertySeedStep) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    ModularGraphOptions options;
    options.modules = 2 + static_cast<int>(seed % 2);
    options.body = 2 + static_cast<int>(seed % 3);
    options.edge_probability = 0.5;
    options.articulation = seed % 3 == 0;
    options.devices = 2 + static_cast<int>(seed % 2);
    const TaskGraph graph = modular_graph(seed, options);
    const Plan split = plan_milp_split(graph, quiet_split());
    ASSERT_NO_THROW(validate_plan(split, graph));
    EXPECT_EQ(split.notes["single_channel"], true);
    EXPECT_EQ(split.notes["status"], "optimal");
    // The DP's own total is what the simulator predicts for the combined plan.
    EXPECT_TRUE(close(split.notes["predicted_makespan"].get<double>(), split.makespan))
        << split.notes["predicted_makespan"].get<double>() << " vs " << split.makespan;
    const Plan exact = plan_milp(graph, quiet_milp());
    ASSERT_EQ(exact.notes["status"], "optimal");
    EXPECT_TRUE(close(split.makespan, exact.makespan))
        << "milp-split " << split.makespan << " vs milp " << exact.makespan;
  }
}

TEST(MilpSplit, SolvesInSeveralProcessesGiveTheSameOptimum) {
  const TaskGraph graph = modular_graph(7, modules_of(4, 4, 0.5));
  MilpSplitOptions one = quiet_split();
  one.parallel_solves = 1;
  MilpSplitOptions three = quiet_split();
  three.parallel_solves = 3;
  const Plan serial = plan_milp_split(graph, one);
  const Plan parallel = plan_milp_split(graph, three);
  ASSERT_NO_THROW(validate_plan(parallel, graph));
  EXPECT_EQ(serial.notes["status"], "optimal");
  EXPECT_EQ(parallel.notes["status"], "optimal");
  EXPECT_EQ(parallel.notes["module_solves"], serial.notes["module_solves"]);
  EXPECT_TRUE(close(parallel.makespan, serial.makespan))
      << parallel.makespan << " vs " << serial.makespan;
}

TEST(MilpSplit, MultiChannelGivesAValidPlanNoBetterThanTheOptimum) {
  for (uint64_t seed = 20; seed < 24; seed += testing::kPropertySeedStep) {
    ModularGraphOptions options;
    options.modules = 2;
    options.body = 3;
    options.edge_probability = 0.6;
    options.channels = 2;
    const TaskGraph graph = modular_graph(seed, options);
    const Plan split = plan_milp_split(graph, quiet_split(2));
    ASSERT_NO_THROW(validate_plan(split, graph));
    EXPECT_EQ(split.notes["single_channel"], false);
    EXPECT_GE(split.makespan, plan_milp(graph, quiet_milp()).makespan * (1 - 1e-9))
        << "seed " << seed;
  }
}

TEST(MilpSplit, NeverReturnsAPlanLongerThanHeft) {
  // Module after module, the multi-channel combination can lose to a list schedule; the split
  // then returns HEFT's plan and keeps its own makespan in the notes.
  int fallbacks = 0;
  for (uint64_t seed = 1; seed <= 12; seed += testing::kPropertySeedStep) {
    ModularGraphOptions options = modules_of(4, 4, 0.4, 2);
    options.communication_ratio = 0.1;
    const TaskGraph graph = modular_graph(seed, options);
    const Plan split = plan_milp_split(graph, quiet_split(2));
    ASSERT_NO_THROW(validate_plan(split, graph));
    const double heft = plan_heft(graph, {}).makespan;
    EXPECT_LE(split.makespan, heft * (1 + 1e-12)) << "seed " << seed;
    if (split.notes.contains("fallback")) {
      ++fallbacks;
      EXPECT_EQ(split.notes["fallback"], "heft");
      EXPECT_GT(split.notes["split_makespan"].get<double>(), split.makespan);
      EXPECT_TRUE(close(split.makespan, heft));
    }
  }
  EXPECT_GT(fallbacks, 0);  // the seeds include graphs where the combination loses
}

TEST(MilpSplit, BatchedGraphsAreSolvedModuleByModule) {
  ModularGraphOptions options;
  options.modules = 3;
  options.body = 2;
  options.devices = 2;
  const TaskGraph batched = batch_task_graph(modular_graph(30, options), 4, {2, 2});
  const Plan plan = plan_milp_split(batched, quiet_split(0));
  ASSERT_NO_THROW(validate_plan(plan, batched));
  EXPECT_EQ(plan.objective, "throughput");
  EXPECT_EQ(plan.batch, 4);
  EXPECT_EQ(plan.notes["single_channel"], false);
  EXPECT_GE(plan.notes["modules"].get<int>(), 3);
}

TEST(MilpSplit, ATightBudgetIsSharedAndStillGivesAValidPlan) {
  // Many module solves and little time: every solve gets its share (the last ones the warm
  // start), the DP still combines them, and the whole stays near its budget.
  ModularGraphOptions options;
  options.modules = 12;
  options.body = 6;
  options.edge_probability = 0.4;
  const TaskGraph graph = modular_graph(50, options);
  MilpSplitOptions split = quiet_split();
  split.time_limit_seconds = 0.5;
  const Plan plan = plan_milp_split(graph, split);
  ASSERT_NO_THROW(validate_plan(plan, graph));
  EXPECT_EQ(plan.notes["single_channel"], true);
  EXPECT_GE(plan.notes["module_solves"].get<int>(), 12);
  EXPECT_LT(plan.notes["solve_seconds"].get<double>(), 5.0);
  EXPECT_TRUE(close(plan.notes["predicted_makespan"].get<double>(), plan.makespan));
  EXPECT_LE(plan.makespan, plan_heft(graph, {}).makespan * 1.5);
}

TEST(MilpSplit, OneModuleFallsBackToMilp) {
  RandomTaskGraphOptions options;
  options.tasks = 6;
  options.edge_probability = 1.0;
  const TaskGraph graph = random_task_graph(8, options);
  const Plan plan = plan_milp_split(graph, quiet_split());
  EXPECT_EQ(plan.strategy, "milp-split");
  EXPECT_EQ(plan.notes["modules"], 1);
  EXPECT_TRUE(close(plan.makespan, plan_milp(graph, quiet_milp()).makespan));
}

TEST(MilpSplit, MemoryOverflowOfTheDpFallsBackToAFittingPlan) {
  // Every module alone would put everything on the fastest device; together they do not fit.
  ModularGraphOptions options;
  options.modules = 3;
  options.body = 2;
  options.devices = 2;
  TaskGraph graph = modular_graph(40, options);
  for (Task& task : graph.tasks) task.weight_bytes = 100;
  for (Device& device : graph.machine.devices) {
    device.memory_bytes = 100.0 * static_cast<double>(graph.tasks.size()) * 0.6;
  }
  const Plan plan = plan_milp_split(graph, quiet_split());
  EXPECT_EQ(plan.notes["memory_fallback"], true);
  EXPECT_NO_THROW(validate_plan(plan, graph));
}

}  // namespace
}  // namespace cleave
