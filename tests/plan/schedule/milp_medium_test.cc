// The MILP on a shared link: its messages queue on the one medium, so a plan that sends more
// of them at once is no longer priced as if each pair had its own link; the program's objective
// is the simulator's prediction of the plan it makes.
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

// a (1 s, on p only) feeds b and c (4 s on p, 2 s on q or r) 100 bytes each: 1 s on any link,
// 0.5 s latency. `extra` adds machine fields.
std::string fan_out(const std::string& extra) {
  return R"({"devices": [{"name": "p"}, {"name": "q"}, {"name": "r"}],
    "bandwidth": 100, "latency": 0.5, )" +
         extra + R"(
    "tasks": [{"name": "a", "time": [1, null, null], "output_bytes": 100},
              {"name": "b", "time": [4, 2, 2]}, {"name": "c", "time": [4, 2, 2]}],
    "edges": [["a", "b"], ["a", "c"]]})";
}

// The plan of `graph` and its objective, which must be the simulator's prediction of it.
Plan planned(const std::string& text) {
  const TaskGraph graph = graph_from_text(text);
  const MilpSolution solution = solve_milp(graph, quiet_milp());
  EXPECT_EQ(solution.status, "optimal");
  const Plan plan = plan_milp(graph, quiet_milp());
  EXPECT_DOUBLE_EQ(solution.objective, plan.makespan) << text;
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), plan.makespan) << text;
  return plan;
}

int remote_readers(const Plan& plan) {
  return (plan.tasks[1].worker != 0) + (plan.tasks[2].worker != 0);
}

TEST(MilpMediumTest, OnLinksOfTheirOwnBothReadersGoElsewhere) {
  // b and c each there at 2.5 s on their own links: 4.5 s (on p one of them ends at 5).
  const Plan plan = planned(fan_out(R"("shared_link": false,)"));
  EXPECT_EQ(remote_readers(plan), 2);
  EXPECT_DOUBLE_EQ(plan.makespan, 4.5);
}

TEST(MilpMediumTest, OnASharedLinkTheSecondMessageWaitsItsTurn) {
  // One medium: the second message crosses 2-3 s (there 3.5, done 5.5); keeping one reader on
  // p (1-5 s) and sending the other (done 4.5) is 5 s.
  const Plan plan = planned(fan_out(R"("shared_link": true,)"));
  EXPECT_EQ(remote_readers(plan), 1);
  EXPECT_DOUBLE_EQ(plan.makespan, 5);
}

TEST(MilpMediumTest, OnASharedLinkWithPricedEndsTheSecondMessageWaitsToo) {
  // a sends each message in 0.2 s: one sent, p runs a 0-1.2 and its reader 1.2-5.2; both sent,
  // the second is there at 3.5 and done at 5.5.
  const Plan plan = planned(fan_out(R"("shared_link": true, "send_seconds": 0.2,)"));
  EXPECT_EQ(remote_readers(plan), 1);
  EXPECT_DOUBLE_EQ(plan.makespan, 5.2);
}

TEST(MilpMediumTest, ABurstLetsTheSecondMessageThroughEarlier) {
  // A 50-byte bucket: each message is across 0.5 s ahead of the rate, both sent is 5 s, as one.
  const Plan plan = planned(fan_out(R"("shared_link": true, "link_burst_bytes": 50,)"));
  EXPECT_DOUBLE_EQ(plan.makespan, 5);
}

TEST(MilpMediumTest, MilpSplitQueuesOnTheMediumToo) {
  MilpSplitOptions options;
  options.module = quiet_milp();
  const Plan plan = plan_milp_split(graph_from_text(fan_out(R"("shared_link": true,)")), options);
  EXPECT_EQ(remote_readers(plan), 1);
  EXPECT_DOUBLE_EQ(plan.makespan, 5);
}

}  // namespace
}  // namespace cleave
