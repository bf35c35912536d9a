// The planner registry: every strategy once, by name, each family where its commands look.
#include "plan/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;
using ::testing::HasSubstr;

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Task-graph planners share one name space (find_planner, --strategy); stream planners
// another (--placement).
TEST(PlannerRegistry, EveryNameIsRegisteredOnce) {
  std::set<std::string> names, stream_names;
  for (const PlannerEntry& entry : planners()) {
    std::set<std::string>& space = entry.family == PlannerFamily::kStream ? stream_names : names;
    EXPECT_TRUE(space.insert(entry.name).second) << entry.name;
    EXPECT_FALSE(entry.description.empty()) << entry.name;
    EXPECT_TRUE(entry.run) << entry.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"lc", "clone", "hypercluster", "switched-hypercluster",
                                          "met", "greedy", "heft", "annealing", "evolution", "milp",
                                          "milp-split"}));
  EXPECT_EQ(stream_names, (std::set<std::string>{"balanced", "greedy", "contiguous"}));
}

TEST(PlannerRegistry, FindPlannerGivesTheTaskGraphPlannerOfASharedName) {
  EXPECT_EQ(find_planner("greedy").family, PlannerFamily::kHeterogeneous);
}

TEST(PlannerRegistry, StreamPlannersRefuseATaskGraph) {
  for (const std::string& name : planner_names(PlannerFamily::kStream)) {
    const PlannerEntry* entry = nullptr;
    for (const PlannerEntry& e : planners()) {
      if (e.family == PlannerFamily::kStream && e.name == name) entry = &e;
    }
    ASSERT_NE(entry, nullptr) << name;
    try {
      entry->run(TaskGraph{}, 1, ScheduleOptions{});
      FAIL() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("cleave stream run --placement " + name));
    }
  }
}

TEST(PlannerRegistry, ScheduleOffersExactlyTheHeterogeneousPlanners) {
  std::vector<std::string> scheduled;
  for (const SchedulerEntry& entry : schedulers()) scheduled.push_back(entry.name);
  EXPECT_EQ(scheduled, planner_names(PlannerFamily::kHeterogeneous));
}

// A new heterogeneous planner must join the hand-computed cases or the exact solvers' tests.
TEST(PlannerRegistry, EveryHeterogeneousPlannerIsTested) {
  for (const std::string& name : planner_names(PlannerFamily::kHeterogeneous)) {
    EXPECT_TRUE(contains(testing::kPlanners, name) || contains(testing::kExactPlanners, name))
        << name << " is registered but in neither planner test list";
  }
}

TEST(PlannerRegistry, UnknownNameListsTheKnownOnes) {
  try {
    find_planner("magic");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown strategy \"magic\" (known: lc, clone,"));
  }
}

TEST(PlannerRegistry, OneSamplePlannersRefuseSeveral) {
  const PlannerEntry& lc = find_planner("lc");
  EXPECT_NO_THROW(check_samples(lc, 1));
  try {
    check_samples(lc, 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("strategy 'lc' plans one sample"));
  }
  EXPECT_NO_THROW(check_samples(find_planner("hypercluster"), 2));
}

// Fork-join on two equal workers: every registered planner returns a valid plan of the task
// graph it returns (cloning may add copies of tasks), never better than the bounds: the
// critical path (6 s) and the work shared by both workers (5 s a sample).
TEST(PlannerRegistry, EveryPlannerPlansAForkJoin) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1e12], [1e12, 0]],
    "tasks": [{"name": "s", "time": [1, 1]}, {"name": "a", "time": [4, 4]},
              {"name": "b", "time": [4, 4]}, {"name": "j", "time": [1, 1]}],
    "edges": [["s", "a"], ["s", "b"], ["a", "j"], ["b", "j"]]})");
  ScheduleOptions options;
  options.time_limit_seconds = 10;
  options.max_iterations = 200;
  for (const PlannerEntry& entry : planners()) {
    if (entry.family == PlannerFamily::kStream) continue;  // they place stream graphs
    const int samples = entry.plans_samples ? 2 : 1;
    const PlannedTasks planned = entry.run(graph, samples, options);
    EXPECT_NO_THROW(validate_plan(planned.plan, planned.tasks)) << entry.name;
    EXPECT_GE(planned.tasks.tasks.size(), graph.tasks.size() * samples) << entry.name;
    EXPECT_GE(planned.plan.makespan, std::max(6.0, 5.0 * samples) - 1e-9) << entry.name;
  }
}

}  // namespace
}  // namespace cleave
