// The MILP's messages priced as the simulator prices them: its objective for the plan it makes
// is the simulator's prediction of that plan where the program's linear model is exact.
#include <gtest/gtest.h>

#include <string>

#include "plan/schedule/milp.h"
#include "plan/schedule/milp_split.h"
#include "plan/simulator.h"
#include "quiet_milp.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;
using testing::quiet_milp;

// a feeds b and c (10 s each), which d joins, on two ranks: a 300-byte value crosses the link in
// 0.5 + 3 s and each end copies it in 1 s when priced (endpoint_bandwidth 300).
std::string diamond(bool priced, const std::string& join_extra = "") {
  return std::string(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],)") +
         (priced ? R"("endpoint_bandwidth": 300,)" : "") + R"(
    "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 300},
              {"name": "b", "time": [10, 10], "output_bytes": 300},
              {"name": "c", "time": [10, 10], "output_bytes": 300},
              {"name": "d", "time": [1, 1])" +
         join_extra + R"(}],
    "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]})";
}

TEST(MilpPricedTest, TheObjectiveIsTheSimulatorsPredictionOfThePlan) {
  // Best: a and b on one rank, c and d on the other (a sends 1-2, c runs 4.5-14.5, d takes b's
  // message as it comes at 12 + 3.5 = 15.5, after copying: 15.5-16.5).
  const TaskGraph priced = graph_from_text(diamond(true));
  const MilpSolution solution = solve_milp(priced, quiet_milp());
  ASSERT_EQ(solution.status, "optimal");
  const Plan plan = plan_milp(priced, quiet_milp());
  EXPECT_DOUBLE_EQ(solution.objective, 16.5);
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), 16.5);
  EXPECT_DOUBLE_EQ(plan.makespan, 16.5);
  EXPECT_EQ(plan.tasks[0].worker, plan.tasks[1].worker);
  EXPECT_EQ(plan.tasks[2].worker, plan.tasks[3].worker);
  EXPECT_NE(plan.tasks[0].worker, plan.tasks[2].worker);
  // Unpriced the link alone is the price: objective 15.5 = the simulator's on that graph.
  const TaskGraph unpriced = graph_from_text(diamond(false));
  const Plan link_only = plan_milp(unpriced, quiet_milp());
  EXPECT_DOUBLE_EQ(link_only.notes.at("planner_makespan").get<double>(), 15.5);
  EXPECT_DOUBLE_EQ(link_only.makespan, 15.5);
}

TEST(MilpPricedTest, AConcatsCopiesAndADeviceZeroGatherArePricedAsTheSimulatorPricesThem) {
  // d copies its remote input into its output (1 s) and its output is gathered on p: on q it
  // would send 1 s more and the output would reach p at 17.5 + 3.5 = 21; on p, 17.5.
  const TaskGraph graph = graph_from_text(diamond(
      true, R"(, "copies_remote_inputs": true, "model_outputs": [{"name": "y", "bytes": 300}])"));
  const Plan plan = plan_milp(graph, quiet_milp());
  EXPECT_EQ(plan.tasks[3].worker, 0);
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), 17.5);
  EXPECT_DOUBLE_EQ(plan.makespan, 17.5);
  EXPECT_DOUBLE_EQ(simulate(plan, graph).makespan, 17.5);
}

TEST(MilpPricedTest, TheHandOutAndTheGatherArePriced) {
  // a reads a model input, b makes a model output: both on p take 10 s; a on q waits for the
  // input (p copies it 0-1, the link takes 3.5: 3.5) and ends at 8.5, as does b on q (its
  // output sent 5-6, there at 5 + 3.5). The link alone would say 5.
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]], "endpoint_bandwidth": 300,
    "tasks": [{"name": "a", "time": [5, 5], "model_inputs": [{"name": "x", "bytes": 300}]},
              {"name": "b", "time": [5, 5], "model_outputs": [{"name": "y", "bytes": 300}]}],
    "edges": []})");
  const Plan plan = plan_milp(graph, quiet_milp());
  EXPECT_NE(plan.tasks[0].worker, plan.tasks[1].worker);
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), 8.5);
  EXPECT_DOUBLE_EQ(plan.makespan, 8.5);
}

TEST(MilpPricedTest, MilpSplitPlansOnThePricedModelToo) {
  const TaskGraph priced = graph_from_text(diamond(true));
  MilpSplitOptions options;
  options.module = quiet_milp();
  const Plan plan = plan_milp_split(priced, options);
  EXPECT_DOUBLE_EQ(plan.makespan, 16.5);
}

}  // namespace
}  // namespace cleave
