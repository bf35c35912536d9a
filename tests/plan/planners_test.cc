// Every planner on small graphs whose best makespan is known by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::expect_consistent;
using testing::graph_from_text;
using ::testing::HasSubstr;
using testing::kPlanners;
using testing::run_planner;

class EveryPlanner : public ::testing::TestWithParam<std::string> {};

// A chain on a fast and a slow device with a slow link: everything on the fast one, 3 s.
TEST_P(EveryPlanner, ChainStaysOnTheFastDevice) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "fast"}, {"name": "slow"}], "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "a", "time": [1, 2], "output_bytes": 10},
              {"name": "b", "time": [1, 2], "output_bytes": 10},
              {"name": "c", "time": [1, 2]}],
    "edges": [["a", "b"], ["b", "c"]]})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, 3);
  EXPECT_EQ(plan.order[0], (std::vector<int>{0, 1, 2}));
}

// Two independent tasks: 2 s on the fast device, 3 s on the slow one. Best: one on each, 3 s;
// MET, which ignores load, puts both on the fast device, 4 s.
TEST_P(EveryPlanner, IndependentTasksOnDevicesOfDifferentSpeed) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "fast"}, {"name": "slow"}], "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "x", "time": [2, 3]}, {"name": "y", "time": [2, 3]}]})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, GetParam() == "met" ? 4 : 3);
}

// Fork-join over two identical devices with free transfers: the branches run in parallel,
// 1 + 4 + 1 = 6 s (MET keeps everything on device 0: 10 s).
TEST_P(EveryPlanner, ForkJoinRunsBranchesInParallel) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1e12], [1e12, 0]],
    "tasks": [{"name": "s", "time": [1, 1]}, {"name": "a", "time": [4, 4]},
              {"name": "b", "time": [4, 4]}, {"name": "j", "time": [1, 1]}],
    "edges": [["s", "a"], ["s", "b"], ["a", "j"], ["b", "j"]]})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, GetParam() == "met" ? 10 : 6);
}

// Expensive transfers make splitting the fork-join worse than staying on one device (10 s).
TEST_P(EveryPlanner, ForkJoinStaysTogetherWhenTransfersCostMore) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "s", "time": [1, 1], "output_bytes": 10},
              {"name": "a", "time": [4, 4], "output_bytes": 10},
              {"name": "b", "time": [4, 4], "output_bytes": 10}, {"name": "j", "time": [1, 1]}],
    "edges": [["s", "a"], ["s", "b"], ["a", "j"], ["b", "j"]]})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, 10);
}

// b is 5x faster on q, but p and q have no link, and a can only run on p: b must stay on p.
TEST_P(EveryPlanner, NoLinkKeepsConsumerWithItsProducer) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 0], [0, 0]],
    "tasks": [{"name": "a", "time": [1, null], "output_bytes": 1},
              {"name": "b", "time": [5, 1]}],
    "edges": [["a", "b"]]})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.tasks[1].worker, 0);
  EXPECT_EQ(plan.makespan, 6);
}

// The fast device holds only one of the two 60-byte weights: the other task goes elsewhere.
TEST_P(EveryPlanner, RespectsDeviceMemory) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "small", "memory_bytes": 100}, {"name": "big"}],
    "bandwidth": [[0, 1e9], [1e9, 0]],
    "tasks": [{"name": "x", "time": [1, 10], "weight_bytes": 60},
              {"name": "y", "time": [1, 10], "weight_bytes": 60}]})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_NE(plan.tasks[0].worker, plan.tasks[1].worker);
  EXPECT_EQ(plan.makespan, 10);
}

TEST_P(EveryPlanner, SaysSoWhenWeightsFitNowhere) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "tiny", "memory_bytes": 10}],
    "tasks": [{"name": "huge", "time": [1], "weight_bytes": 60}]})");
  try {
    run_planner(GetParam(), graph);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("task \"huge\" (60 weight bytes) fits on no device"));
  }
}

TEST_P(EveryPlanner, EmptyGraph) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "p"}], "tasks": []})");
  const Plan plan = run_planner(GetParam(), graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, 0);
}

TEST_P(EveryPlanner, ZeroTimeTasksDoNotDeadlock) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1e9], [1e9, 0]],
    "tasks": [{"name": "a", "time": [1, 1]}, {"name": "b", "time": [0, 0]},
              {"name": "c", "time": [0, 0]}, {"name": "d", "time": [0, 0]},
              {"name": "e", "time": [1, 1]}],
    "edges": [["a", "b"], ["b", "c"], ["c", "d"], ["a", "e"]]})");
  expect_consistent(run_planner(GetParam(), graph), graph);
}

TEST_P(EveryPlanner, NamesItselfInThePlan) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "p"}],
                                              "tasks": [{"name": "a", "time": [1]}]})");
  EXPECT_EQ(run_planner(GetParam(), graph).strategy, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Planners, EveryPlanner, ::testing::ValuesIn(kPlanners),
                         [](const auto& info) { return info.param; });

TEST(SearchPlannerTest, AnnealingIsRepeatableForASeed) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}, {"name": "r"}],
    "bandwidth": [[0, 10, 10], [10, 0, 10], [10, 10, 0]],
    "tasks": [{"name": "a", "time": [1, 2, 3], "output_bytes": 5},
              {"name": "b", "time": [2, 1, 3], "output_bytes": 5},
              {"name": "c", "time": [3, 2, 1], "output_bytes": 5},
              {"name": "d", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]})");
  const Plan first = run_planner("annealing", graph, 42, 500);
  const Plan second = run_planner("annealing", graph, 42, 500);
  EXPECT_EQ(plan_to_json(first, graph)["tasks"], plan_to_json(second, graph)["tasks"]);
  EXPECT_EQ(first.notes["iterations"], 500);
}

TEST(SearchPlannerTest, SearchesNeverReturnWorseThanTheirStart) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1e12], [1e12, 0]],
    "tasks": [{"name": "s", "time": [1, 1]}, {"name": "a", "time": [4, 4]},
              {"name": "b", "time": [4, 4]}, {"name": "j", "time": [1, 1]}],
    "edges": [["s", "a"], ["s", "b"], ["a", "j"], ["b", "j"]]})");
  for (const std::string name : {"annealing", "evolution"}) {
    const Plan plan = run_planner(name, graph, 3, 50);
    EXPECT_LE(plan.makespan, plan.notes["start_makespan"].get<double>()) << name;
  }
}

TEST(SearchPlannerTest, ZeroIterationsReturnsTheStart) {
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1e12], [1e12, 0]],
    "tasks": [{"name": "x", "time": [2, 3]}, {"name": "y", "time": [2, 3]}]})");
  EXPECT_EQ(run_planner("evolution", graph, 1, 0).makespan, 4);
  EXPECT_EQ(run_planner("annealing", graph, 1, 0).makespan, 4);
}

}  // namespace
}  // namespace cleave
