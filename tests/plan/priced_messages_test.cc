// Priced message ends: the planners make a plan on the simulator's model, the one that predicts it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/earliest_finish.h"
#include "plan/list_schedule.h"
#include "plan/registry.h"
#include "plan/simulator.h"
#include "planner_checks.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_error;
using testing::graph_from_text;
using ::testing::HasSubstr;

// a -> b, a -> c on two ranks; a's 300-byte value crosses the link in 1 s (no latency) and each
// end copies it in 3 s when priced (endpoint_bandwidth 100).
std::string fork_graph(bool priced) {
  return std::string(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 300], [300, 0]], "latency": [[0, 0], [0, 0]],)") +
         (priced ? R"("endpoint_bandwidth": 100,)" : "") + R"(
    "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 300},
              {"name": "b", "time": [2, 2]}, {"name": "c", "time": [2, 2]}],
    "edges": [["a", "b"], ["a", "c"]]})";
}

Plan make_plan(const std::vector<int>& workers, const std::vector<std::vector<int>>& order) {
  Plan plan;
  for (std::size_t task = 0; task < workers.size(); ++task)
    plan.tasks.push_back(PlannedTask{static_cast<int>(task), workers[task], 0, 0});
  plan.order = order;
  return plan;
}

TEST(PricedMessagesTest, HeftKeepsAReaderBesideItsProducerWhenTheEndsCostMoreThanTheyGain) {
  EarliestFinishOptions options;
  options.planner = "heft";
  // Unpriced: c on q starts at 1 + 1 and ends at 4, before b's 3-5 on p would let it.
  const Plan unpriced = plan_earliest_finish(graph_from_text(fork_graph(false)), options);
  EXPECT_EQ(unpriced.tasks[2].worker, 1);
  EXPECT_DOUBLE_EQ(unpriced.makespan, 4);
  // Priced, that plan takes 6 s (a sends to q 1-4, b then runs 4-6, c copies as the message
  // comes and runs 4-6); all on p takes 5, and heft sees it.
  const TaskGraph priced = graph_from_text(fork_graph(true));
  EXPECT_DOUBLE_EQ(simulate(unpriced, priced).makespan, 6);
  const Plan plan = plan_earliest_finish(priced, options);
  EXPECT_EQ(plan.tasks[2].worker, 0);
  EXPECT_DOUBLE_EQ(plan.makespan, 5);
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), 5);
}

// Past clocked_placement_steps (tasks² · devices: 3² · 2 = 18 here) heft keeps the link's price
// for its candidates, as on a large graph on many ranks, where clocking each would take seconds.
TEST(PricedMessagesTest, HeftKeepsTheLinksPriceWhereClockingEveryCandidateCostsTooMuch) {
  const TaskGraph priced = graph_from_text(fork_graph(true));
  EarliestFinishOptions options;
  options.planner = "heft";
  options.clocked_placement_steps = 18;
  EXPECT_EQ(plan_earliest_finish(priced, options).tasks[2].worker, 0);
  options.clocked_placement_steps = 17;
  EXPECT_EQ(plan_earliest_finish(priced, options).tasks[2].worker, 1);
}

TEST(PricedMessagesTest, AppendSchedulingJudgesAnAssignmentWithTheEndsPriced) {
  const TaskGraph priced = graph_from_text(fork_graph(true));
  AppendScheduler scheduler(priced, upward_rank_order(priced));
  // The link alone would say 4 (a 0-1, c on q 2-4); with a's send to q after it, 6.
  EXPECT_DOUBLE_EQ(scheduler.makespan({0, 0, 1}), 6);
  EXPECT_DOUBLE_EQ(scheduler.makespan({0, 0, 0}), 5);
  const Plan plan = scheduler.to_plan({0, 0, 1}, "test");
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), plan.makespan);
  const TaskGraph unpriced = graph_from_text(fork_graph(false));
  EXPECT_DOUBLE_EQ(AppendScheduler(unpriced, upward_rank_order(unpriced)).makespan({0, 0, 1}), 4);
}

// Two branches of two tasks each joined by a Concat, on three ranks with priced ends, and busy
// times and a dispatch overhead: the planners' estimates are the simulator's for every plan.
const char* const kPricedJoin = R"({
  "devices": [{"name": "p"}, {"name": "q"}, {"name": "r"}],
  "bandwidth": [[0, 1000, 1000], [1000, 0, 1000], [1000, 1000, 0]],
  "latency": [[0, 0.1, 0.1], [0.1, 0, 0.1], [0.1, 0.1, 0]],
  "endpoint_bandwidth": 2000, "task_seconds": 0.05,
  "tasks": [{"name": "in", "time": [1, 1, 1], "output_bytes": 500},
            {"name": "b1", "time": [3, 3, 3], "busy_time": [4, 4, 4], "output_bytes": 800},
            {"name": "b2", "time": [2, 2, 2], "busy_time": [3, 3, 3], "output_bytes": 800},
            {"name": "c1", "time": [4, 4, 4], "output_bytes": 200},
            {"name": "c2", "time": [5, 5, 5], "output_bytes": 200},
            {"name": "join", "time": [0.5, 0.5, 0.5], "copies_remote_inputs": true}],
  "edges": [["in", "b1"], ["in", "b2"], ["in", "c1"], ["in", "c2"], ["b1", "join"],
            ["b2", "join"], ["c1", "join"], ["c2", "join"]]})";

TEST(PricedMessagesTest, EveryListPlannerEstimatesWhatTheSimulatorPredicts) {
  const TaskGraph graph = graph_from_text(kPricedJoin);
  for (const std::string& name : cleave::testing::kPlanners) {
    const Plan plan = cleave::testing::run_planner(name, graph);
    cleave::testing::expect_consistent(plan, graph);
  }
  for (const std::string name : {"lc", "clone"}) {
    const PlannedTasks planned = find_planner(name).run(graph, 1, {});
    cleave::testing::expect_consistent(planned.plan, planned.tasks);
  }
}

TEST(PricedMessagesTest, AConcatCopiesEachInputFromAnotherRankInsideItsTask) {
  TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 300], [300, 0]], "latency": [[0, 0], [0, 0]], "endpoint_bandwidth": 100,
    "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 300},
              {"name": "b", "time": [1, 1], "output_bytes": 300},
              {"name": "join", "time": [1, 1], "copies_remote_inputs": true}],
    "edges": [["a", "join"], ["b", "join"]]})");
  // a on q sends 1-4; join on p (after b 0-1) copies a's message as it comes (4) and then
  // copies it into its output: 4-8 instead of 4-5.
  const Plan plan = make_plan({1, 0, 0}, {{1, 2}, {0}});
  const Simulation result = simulate(plan, graph);
  EXPECT_DOUBLE_EQ(result.start[2], 4);
  EXPECT_DOUBLE_EQ(result.finish[2], 8);
  graph.tasks[2].copies_remote_inputs = false;
  EXPECT_DOUBLE_EQ(simulate(plan, graph).finish[2], 5);
  // The input made on its own rank costs nothing more: all on p, 3 s either way.
  graph.tasks[2].copies_remote_inputs = true;
  EXPECT_DOUBLE_EQ(simulate(make_plan({0, 0, 0}, {{0, 1, 2}, {}}), graph).makespan, 3);
}

TEST(PricedMessagesTest, ATaskGraphFileKeepsItsConcatsAndRefusesAFlagThatIsNotABoolean) {
  const TaskGraph graph = graph_from_text(kPricedJoin);
  EXPECT_TRUE(graph.tasks[5].copies_remote_inputs);
  EXPECT_FALSE(graph.tasks[4].copies_remote_inputs);
  const TaskGraph again = task_graph_from_json(task_graph_to_json(graph), "g.json");
  EXPECT_TRUE(again.tasks[5].copies_remote_inputs);
  EXPECT_FALSE(again.tasks[4].copies_remote_inputs);
  std::string text = kPricedJoin;
  text.replace(text.find("\"copies_remote_inputs\": true"), 28, "\"copies_remote_inputs\": 1");
  EXPECT_THAT(graph_error(text),
              HasSubstr("task \"join\": copies_remote_inputs: expected true or false, got 1"));
}

TEST(PricedMessagesTest, OrdersOfEveryTaskSimulateAsThePlanAndAPartOfThemLeavesTheRestOut) {
  const TaskGraph graph = graph_from_text(kPricedJoin);
  const Plan plan = make_plan({0, 1, 1, 2, 0, 0}, {{0, 4, 5}, {1, 2}, {3}});
  const Simulation whole = simulate(plan, graph);
  const Simulation same = simulate_orders(plan.order, graph);
  EXPECT_EQ(same.start, whole.start);
  EXPECT_EQ(same.finish, whole.finish);
  EXPECT_EQ(same.makespan, whole.makespan);
  // Without the join, nobody is sent c1's, b1's or b2's values: their workers send nothing
  // after them, and no Concat copies.
  const Simulation part = simulate_orders({{0, 4}, {1, 2}, {3}}, graph);
  EXPECT_LT(part.finish[1], whole.finish[1]);
  EXPECT_EQ(part.finish[5], 0);
  EXPECT_EQ(part.finish[0], whole.finish[0]);
}

TEST(PricedMessagesTest, OrdersThatListATaskBeforeItsProducerOrTwiceAreRefused) {
  const TaskGraph graph = graph_from_text(kPricedJoin);
  EXPECT_THROW(
      {
        try {
          simulate_orders({{0}, {5}, {}}, graph);
        } catch (const Error& error) {
          EXPECT_THAT(error.what(), HasSubstr("\"join\" is listed but its producer \"b1\""));
          throw;
        }
      },
      Error);
  EXPECT_THROW(simulate_orders({{0, 1}, {1}, {}}, graph), Error);
  EXPECT_THROW(simulate_orders({{0}, {}}, graph), Error);
  // b1 before in on one worker, in before b1's reader elsewhere: a deadlock.
  EXPECT_THROW(simulate_orders({{1, 0}, {}, {}}, graph), Error);
}

// Device 0 copies each model input it hands out before its own first task, and a model output
// made elsewhere is copied by its sender after the task and by device 0 after its own tasks:
// rank 0's publish_inputs and gather, priced as every other message.
TEST(PricedMessagesTest, DeviceZerosHandOutAndGatherArePricedAtBothEnds) {
  const auto graph = [](bool priced) {
    return graph_from_text(std::string(R"({
      "devices": [{"name": "p"}, {"name": "q"}],
      "bandwidth": [[0, 300], [300, 0]], "latency": [[0, 0], [0, 0]],)") +
                           (priced ? R"("endpoint_bandwidth": 100,)" : "") + R"(
      "tasks": [{"name": "a", "time": [1, 1], "model_inputs": [{"name": "x", "bytes": 300}],
                 "model_outputs": [{"name": "y", "bytes": 300}]},
                {"name": "b", "time": [5, 5], "model_inputs": [{"name": "x", "bytes": 300}]}],
      "edges": []})");
  };
  const Plan plan = make_plan({1, 0}, {{1}, {0}});
  // p copies x for q 0-3, then runs b 3-8; a on q has x at 3 (it waited: no copy more), runs
  // 3-4 and copies y 4-7; y is on p at 7, and p, busy with b, copies it after b: 8-11.
  const Simulation priced = simulate(plan, graph(true));
  EXPECT_DOUBLE_EQ(priced.start[1], 3);
  EXPECT_DOUBLE_EQ(priced.start[0], 3);
  EXPECT_DOUBLE_EQ(priced.finish[0], 7);
  EXPECT_DOUBLE_EQ(priced.makespan, 11);
  EXPECT_EQ(priced.transfer_count, 2);
  // The link alone: b 0-5, x on q at 1, a 1-2, y on p at 3.
  EXPECT_DOUBLE_EQ(simulate(plan, graph(false)).makespan, 5);
  // Nothing is handed out or gathered when both run on p.
  EXPECT_DOUBLE_EQ(simulate(make_plan({0, 0}, {{0, 1}, {}}), graph(true)).makespan, 6);
  // A device 0 that waits for the output copies it as it comes: b of 1 s ends at 4, y is on p
  // at 7.
  TaskGraph short_b = graph(true);
  short_b.tasks[1].time = {1, 1};
  EXPECT_DOUBLE_EQ(simulate(plan, short_b).makespan, 7);
  // The list planners' estimates are still the simulator's.
  for (const std::string& name : cleave::testing::kPlanners)
    cleave::testing::expect_consistent(cleave::testing::run_planner(name, graph(true)),
                                       graph(true));
}

}  // namespace
}  // namespace cleave
