// The name -> planner dispatch behind `cleave schedule --algo`.
#include "plan/schedule/schedulers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;
using ::testing::HasSubstr;

const char* const kTwoTasks = R"({
  "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1], [1, 0]],
  "tasks": [{"name": "x", "time": [2, 3]}, {"name": "y", "time": [2, 3]}]})";

TEST(SchedulersTest, EveryBuiltInPlannerIsRegistered) {
  for (const std::string& name : testing::kPlanners) {
    bool found = false;
    for (const SchedulerEntry& entry : schedulers()) found = found || entry.name == name;
    EXPECT_TRUE(found) << name;
  }
}

TEST(SchedulersTest, StampsObjectiveBatchAndSolveTime) {
  const TaskGraph graph = graph_from_text(kTwoTasks);
  ScheduleOptions options;
  options.objective = "throughput";
  options.batch = 2;
  const Plan plan = schedule(graph, "heft", options);
  EXPECT_EQ(plan.strategy, "heft");
  EXPECT_EQ(plan.objective, "throughput");
  EXPECT_EQ(plan.batch, 2);
  EXPECT_TRUE(plan.notes.contains("solve_seconds"));
  testing::expect_consistent(plan, graph);
}

TEST(SchedulersTest, PassesSeedAndIterationsToSearches) {
  const TaskGraph graph = graph_from_text(kTwoTasks);
  ScheduleOptions options;
  options.seed = 9;
  options.max_iterations = 17;
  options.time_limit_seconds = 1e6;
  const Plan plan = schedule(graph, "evolution", options);
  EXPECT_EQ(plan.notes["seed"], 9);
  EXPECT_EQ(plan.notes["iterations"], 17);
}

TEST(SchedulersTest, UnknownAlgorithmListsTheKnownOnes) {
  const TaskGraph graph = graph_from_text(kTwoTasks);
  try {
    schedule(graph, "magic", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown algorithm \"magic\" (known: met, greedy, heft"));
  }
}

TEST(SchedulersTest, RefusesAnUnknownObjective) {
  const TaskGraph graph = graph_from_text(kTwoTasks);
  ScheduleOptions options;
  options.objective = "energy";
  EXPECT_THROW(schedule(graph, "met", options), Error);
}

}  // namespace
}  // namespace cleave
