// Property test: on many seeded random DAGs every planner's plan validates and simulates to the
// makespan it reports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/graph.h"
#include "plan/random_task_graph.h"
#include "planner_checks.h"

namespace cleave {
namespace {

using testing::expect_consistent;
using testing::kPlanners;
using testing::run_planner;

RandomTaskGraphOptions options_for(uint64_t seed) {
  RandomTaskGraphOptions options;
  options.tasks = 1 + static_cast<int>(seed * 7 % 30);
  options.devices = 2 + static_cast<int>(seed % 3);
  options.edge_probability = 0.05 + 0.05 * static_cast<double>(seed % 6);
  options.communication_ratio = seed % 4 == 0 ? 0.0 : 0.5 * static_cast<double>(seed % 5);
  options.latency = seed % 5 == 0 ? 1e-4 : 0.0;
  options.unrunnable_probability = seed % 3 == 0 ? 0.3 : 0.0;
  options.memory_fraction = seed % 4 == 1 ? 0.8 : 0.0;
  return options;
}

TEST(RandomPlannersTest, EveryPlanValidatesAndMatchesTheSimulator) {
  int memory_refusals = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    const TaskGraph graph = random_task_graph(seed, options_for(seed));
    for (const std::string& name : kPlanners) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << name);
      try {
        expect_consistent(run_planner(name, graph, seed, 300), graph);
      } catch (const Error& e) {
        // Only a memory-limited graph may be refused, and only for memory.
        EXPECT_GT(options_for(seed).memory_fraction, 0) << e.what();
        EXPECT_THAT(e.what(), ::testing::HasSubstr("fits on no device"));
        ++memory_refusals;
      }
    }
  }
  EXPECT_LT(memory_refusals, 20);
}

// No planner beats the simple bound: the longest path of fastest task times.
TEST(RandomPlannersTest, NoPlanBeatsTheCriticalPathOfFastestTimes) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    RandomTaskGraphOptions options = options_for(seed);
    options.memory_fraction = 0;
    const TaskGraph graph = random_task_graph(seed, options);
    std::vector<double> longest(graph.tasks.size(), 0.0);
    double bound = 0;
    const auto predecessors = graph.predecessors();
    for (int task : graph.topological_order()) {
      double before = 0;
      for (int producer : predecessors[task]) before = std::max(before, longest[producer]);
      const auto& times = graph.tasks[task].time;
      longest[task] = before + *std::min_element(times.begin(), times.end());
      bound = std::max(bound, longest[task]);
    }
    for (const std::string& name : kPlanners) {
      EXPECT_GE(run_planner(name, graph, seed, 200).makespan, bound * (1 - 1e-12))
          << "seed " << seed << ", " << name;
    }
  }
}

// The searches start from MET's assignment and keep the best: never worse than MET.
TEST(RandomPlannersTest, SearchesAreNeverWorseThanMet) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    RandomTaskGraphOptions options = options_for(seed);
    options.memory_fraction = 0;
    const TaskGraph graph = random_task_graph(seed, options);
    const double met = run_planner("met", graph).makespan;
    EXPECT_LE(run_planner("annealing", graph, seed, 300).makespan, met) << "seed " << seed;
    EXPECT_LE(run_planner("evolution", graph, seed, 300).makespan, met) << "seed " << seed;
  }
}

}  // namespace
}  // namespace cleave
