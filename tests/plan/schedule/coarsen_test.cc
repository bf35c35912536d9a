// Chain contraction: which tasks join, what the joined task costs, and plans mapped back.
#include "plan/schedule/coarsen.h"

#include <gtest/gtest.h>

#include "plan/random_task_graph.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"
#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::expect_consistent;
using testing::graph_from_text;

// a -> b -> c is a chain; c fans out to d and e, which meet again in f (neither d -> f nor
// e -> f is a chain: f has two predecessors).
const char* const kChainThenDiamond = R"({
  "devices": [{"name": "cpu"}, {"name": "gpu"}],
  "bandwidth": [[0, 100], [100, 0]],
  "tasks": [{"name": "a", "time": [1, 2], "output_bytes": 10, "weight_bytes": 5},
            {"name": "b", "time": [2, 1], "output_bytes": 20},
            {"name": "c", "time": [3, 1], "output_bytes": 30, "weight_bytes": 7},
            {"name": "d", "time": [4, 2], "output_bytes": 40},
            {"name": "e", "time": [4, 2], "output_bytes": 50},
            {"name": "f", "time": [1, 1], "output_bytes": 60}],
  "edges": [["a", "b"], ["b", "c"], ["c", "d"], ["c", "e"], ["d", "f"], ["e", "f"]]
})";

TEST(ContractChainsTest, JoinsOnlyTasksWhoseOnlySuccessorHasThemAsOnlyPredecessor) {
  const CoarseGraph coarse = contract_chains(graph_from_text(kChainThenDiamond));
  ASSERT_EQ(coarse.members.size(), 4u);
  EXPECT_EQ(coarse.members[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(coarse.members[1], std::vector<int>{3});
  EXPECT_EQ(coarse.members[2], std::vector<int>{4});
  EXPECT_EQ(coarse.members[3], std::vector<int>{5});
  EXPECT_EQ(coarse.coarse_of_task, (std::vector<int>{0, 0, 0, 1, 2, 3}));
}

TEST(ContractChainsTest, AChainsBusyTimeIsTheSumOfItsMembersBusyTimes) {
  const CoarseGraph coarse = contract_chains(graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "a", "time": [1, 2], "busy_time": [3, 4]},
              {"name": "b", "time": [2, 1], "busy_time": [5, 2]}],
    "edges": [["a", "b"]]})"));
  ASSERT_EQ(coarse.graph.tasks.size(), 1u);
  EXPECT_EQ(coarse.graph.tasks[0].time, (std::vector<double>{3, 3}));
  EXPECT_EQ(coarse.graph.tasks[0].busy_time, (std::vector<double>{8, 6}));
}

TEST(ContractChainsTest, AChainCostsTheSumOfItsMembersAndSendsWhatItsLastMemberSends) {
  const CoarseGraph coarse = contract_chains(graph_from_text(kChainThenDiamond));
  const Task& chain = coarse.graph.tasks[0];
  EXPECT_EQ(chain.name, "a..c");
  EXPECT_EQ(chain.time, (std::vector<double>{6, 4}));
  EXPECT_EQ(chain.weight_bytes, 12);
  EXPECT_EQ(chain.output_bytes, 30);
  ASSERT_EQ(coarse.graph.edges.size(), 4u);
  EXPECT_EQ(coarse.graph.edges[0], (std::pair<int, int>{0, 1}));
  EXPECT_EQ(coarse.graph.bytes_on_edge(0), 30);
  EXPECT_EQ(coarse.graph.edges[3], (std::pair<int, int>{2, 3}));
  EXPECT_EQ(coarse.graph.bytes_on_edge(3), 50);
  EXPECT_NO_THROW(coarse.graph.check("coarse"));
}

TEST(ContractChainsTest, SeveralEdgesBetweenTheSameTwoTasksStillMakeAChain) {
  const CoarseGraph coarse = contract_chains(graph_from_text(R"({
    "devices": [{"name": "cpu"}],
    "tasks": [{"name": "a", "time": [1]}, {"name": "b", "time": [1]}],
    "edges": [["a", "b"], ["a", "b"]]
  })"));
  ASSERT_EQ(coarse.members.size(), 1u);
  EXPECT_TRUE(coarse.graph.edges.empty());
}

TEST(ContractChainsTest, SlicesOfABatchedGraphAreLeftAlone) {
  const TaskGraph per_sample = graph_from_text(R"({
    "devices": [{"name": "cpu"}, {"name": "gpu"}],
    "bandwidth": [[0, 100], [100, 0]],
    "tasks": [{"name": "a", "time": [1, 2]}, {"name": "b", "time": [2, 1]}],
    "edges": [["a", "b"]]
  })");
  EXPECT_EQ(contract_chains(per_sample).members.size(), 1u);
  const TaskGraph batched = batch_task_graph(per_sample, 8, default_slice_sizes(8));
  EXPECT_EQ(contract_chains(batched).members.size(), batched.tasks.size());
}

TEST(ExpandPlanTest, RunsEachChainBackToBackAndKeepsTheCoarsePlansMakespan) {
  const TaskGraph fine = graph_from_text(kChainThenDiamond);
  const CoarseGraph coarse = contract_chains(fine);
  const Plan coarse_plan = plan_heft(coarse.graph);
  const Plan plan = expand_plan(coarse_plan, coarse, fine);
  expect_consistent(plan, fine);
  EXPECT_EQ(plan.makespan, coarse_plan.makespan);
  EXPECT_EQ(plan.notes["coarse_tasks"], 4);
  const int worker = plan.tasks[0].worker;
  EXPECT_EQ(plan.tasks[1].worker, worker);
  EXPECT_EQ(plan.tasks[2].worker, worker);
  EXPECT_EQ(plan.tasks[1].start, plan.tasks[0].finish);
  EXPECT_EQ(plan.tasks[2].start, plan.tasks[1].finish);
}

TEST(ExpandPlanTest, KeepsTheMakespanOnRandomGraphs) {
  std::size_t contracted = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RandomTaskGraphOptions options;
    options.tasks = 30;
    options.edge_probability = 0.06;  // sparse, so that chains occur
    const TaskGraph fine = random_task_graph(seed, options);
    const CoarseGraph coarse = contract_chains(fine);
    contracted += fine.tasks.size() - coarse.members.size();
    const Plan coarse_plan = plan_heft(coarse.graph);
    const Plan plan = expand_plan(coarse_plan, coarse, fine);
    EXPECT_NO_THROW(validate_plan(plan, fine)) << "seed " << seed;
    EXPECT_NEAR(plan.makespan, coarse_plan.makespan, 1e-12 * coarse_plan.makespan)
        << "seed " << seed;
  }
  EXPECT_GT(contracted, 20u);  // the property was tested on graphs that had chains
}

TEST(ExpandPlanTest, RefusesAPlanForAnotherGraph) {
  const TaskGraph fine = graph_from_text(kChainThenDiamond);
  const CoarseGraph coarse = contract_chains(fine);
  try {
    expand_plan(plan_heft(fine), coarse, fine);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expand_plan: the plan places 6 tasks, the coarse graph has 4");
  }
}

TEST(ScheduleCoarsenTest, EveryPlannerPlansTheChainsAndReturnsAPlanOfTheFineGraph) {
  const TaskGraph fine = graph_from_text(kChainThenDiamond);
  ScheduleOptions options;
  options.coarsen = true;
  options.time_limit_seconds = 5;
  options.max_iterations = 500;
  for (const SchedulerEntry& entry : schedulers()) {
    const Plan plan = schedule(fine, entry.name, options);
    EXPECT_NO_THROW(validate_plan(plan, fine)) << entry.name;
    EXPECT_EQ(plan.tasks.size(), 6u) << entry.name;
    EXPECT_EQ(plan.notes["coarse_tasks"], 4) << entry.name;
    EXPECT_EQ(plan.makespan, simulate(plan, fine).makespan) << entry.name;
  }
}

}  // namespace
}  // namespace cleave
