// HEFT against the worked example of Topcuoglu, Hariri and Wu (IEEE TPDS 2002, Fig. 2).
#include "plan/schedule/heft.h"

#include <gtest/gtest.h>

#include <cmath>

#include "plan/list_schedule.h"
#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::expect_consistent;
using testing::graph_from_text;
using testing::run_planner;

// Ten tasks on three processors; edge costs are given per edge (bandwidth 1, bytes = cost).
const char* const kTopcuoglu = R"({
  "devices": [{"name": "P1"}, {"name": "P2"}, {"name": "P3"}],
  "bandwidth": [[0, 1, 1], [1, 0, 1], [1, 1, 0]],
  "tasks": [{"name": "n1", "time": [14, 16, 9]},  {"name": "n2", "time": [13, 19, 18]},
            {"name": "n3", "time": [11, 13, 19]}, {"name": "n4", "time": [13, 8, 17]},
            {"name": "n5", "time": [12, 13, 10]}, {"name": "n6", "time": [13, 16, 9]},
            {"name": "n7", "time": [7, 15, 11]},  {"name": "n8", "time": [5, 11, 14]},
            {"name": "n9", "time": [18, 12, 20]}, {"name": "n10", "time": [21, 7, 16]}],
  "edges": [["n1", "n2", 18], ["n1", "n3", 12], ["n1", "n4", 9], ["n1", "n5", 11],
            ["n1", "n6", 14], ["n2", "n8", 19], ["n2", "n9", 16], ["n3", "n7", 23],
            ["n4", "n8", 27], ["n4", "n9", 23], ["n5", "n9", 13], ["n6", "n8", 15],
            ["n7", "n10", 17], ["n8", "n10", 11], ["n9", "n10", 13]]
})";

TEST(HeftTextbookTest, UpwardRanksMatchThePaper) {
  const TaskGraph graph = graph_from_text(kTopcuoglu);
  const std::vector<double> rank = upward_rank(graph);
  const std::vector<double> expected = {108.000, 77.000, 80.000, 80.000, 69.000,
                                        63.333,  42.667, 35.667, 44.333, 14.667};
  for (std::size_t task = 0; task < expected.size(); ++task) {
    EXPECT_NEAR(rank[task], expected[task], 1e-3) << graph.tasks[task].name;
  }
}

TEST(HeftTextbookTest, PriorityOrderMatchesThePaper) {
  const TaskGraph graph = graph_from_text(kTopcuoglu);
  // n1, n3, n4, n2, n5, n6, n9, n7, n8, n10 (0-based indices below).
  EXPECT_EQ(upward_rank_order(graph), (std::vector<int>{0, 2, 3, 1, 4, 5, 8, 6, 7, 9}));
}

TEST(HeftTextbookTest, MakespanIs80) {
  const TaskGraph graph = graph_from_text(kTopcuoglu);
  const Plan plan = plan_heft(graph);
  expect_consistent(plan, graph);
  EXPECT_DOUBLE_EQ(plan.makespan, 80);
}

TEST(HeftTextbookTest, ScheduleMatchesThePaper) {
  const TaskGraph graph = graph_from_text(kTopcuoglu);
  const Plan plan = plan_heft(graph);
  // (processor, start, finish) per task, from the paper's HEFT schedule.
  const std::vector<std::tuple<int, double, double>> expected = {
      {2, 0, 9},   {0, 27, 40}, {2, 9, 28},  {1, 18, 26}, {2, 28, 38},
      {1, 26, 42}, {2, 38, 49}, {0, 57, 62}, {1, 56, 68}, {1, 73, 80}};
  for (std::size_t task = 0; task < expected.size(); ++task) {
    const auto [worker, start, finish] = expected[task];
    EXPECT_EQ(plan.tasks[task].worker, worker) << graph.tasks[task].name;
    EXPECT_DOUBLE_EQ(plan.tasks[task].start, start) << graph.tasks[task].name;
    EXPECT_DOUBLE_EQ(plan.tasks[task].finish, finish) << graph.tasks[task].name;
  }
}

// "a" runs on q (5 s) and its output needs 5 s to reach p, so p idles for 10 s before "x".
// "s" ranks below "x" (mean time 500.5 against 501), so HEFT places it after "x" in its
// order; only insertion lets it use p's idle gap.
constexpr const char* kGapBeforeTransfer = R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "a", "time": [1000, 5], "output_bytes": 5},
              {"name": "x", "time": [2, 1000]},
              {"name": "s", "time": [1, 1000]}],
    "edges": [["a", "x"]]})";

TEST(HeftOptionsTest, InsertionFillsTheGapBeforeAWaitingTask) {
  const TaskGraph graph = graph_from_text(kGapBeforeTransfer);
  const Plan plan = plan_heft(graph, {});
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, 12);
  EXPECT_EQ(plan.order[0], (std::vector<int>{2, 1}));  // s fills [0, 1], then x at [10, 12]
  EXPECT_EQ(plan.tasks[2].start, 0);
}

TEST(HeftOptionsTest, WithoutInsertionATaskCannotFillAnEarlierGap) {
  const TaskGraph graph = graph_from_text(kGapBeforeTransfer);
  HeftOptions no_insertion;
  no_insertion.insertion = false;
  const Plan plan = plan_heft(graph, no_insertion);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, 13);
  EXPECT_EQ(plan.order[0], (std::vector<int>{1, 2}));  // s appended after x: [12, 13]
}

// Greedy appends in topological order and never inserts, so here it loses to HEFT.
TEST(GreedyTest, AppendsWhereHeftInserts) {
  const TaskGraph graph = graph_from_text(kGapBeforeTransfer);
  const Plan plan = run_planner("greedy", graph);
  expect_consistent(plan, graph);
  EXPECT_EQ(plan.makespan, 13);
  EXPECT_EQ(plan.order[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(plan.order[1], (std::vector<int>{0}));
  EXPECT_LT(plan_heft(graph, {}).makespan, plan.makespan);
}

}  // namespace
}  // namespace cleave
