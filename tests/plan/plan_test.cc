// Plans: transfers, validation (missing task, wrong worker, deadlock, memory, links) and JSON.
#include "plan/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;
using ::testing::HasSubstr;

// a -> b -> d, a -> c -> d on a cpu and a gpu.
const char* const kDiamond = R"({
  "devices": [{"name": "cpu"}, {"name": "gpu", "memory_bytes": 100}],
  "bandwidth": [[0, 1000], [1000, 0]],
  "tasks": [{"name": "a", "time": [1, 2], "output_bytes": 100},
            {"name": "b", "time": [4, 1], "output_bytes": 200, "weight_bytes": 60},
            {"name": "c", "time": [2, 1], "output_bytes": 300, "weight_bytes": 60},
            {"name": "d", "time": [1, null]}],
  "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]
})";

Plan make_plan(const std::vector<int>& workers, const std::vector<std::vector<int>>& order) {
  Plan plan;
  plan.strategy = "hand";
  for (std::size_t task = 0; task < workers.size(); ++task) {
    plan.tasks.push_back(PlannedTask{static_cast<int>(task), workers[task], 0, 0});
  }
  plan.order = order;
  return plan;
}

std::string validation_error(const Plan& plan, const TaskGraph& graph) {
  try {
    validate_plan(plan, graph);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(PlanTest, TransfersAreTheCrossWorkerEdges) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const Plan plan = make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}});
  const std::vector<Transfer> transfers = plan.transfers(graph);
  ASSERT_EQ(transfers.size(), 2u);
  EXPECT_EQ(transfers[0].producer_task, 0);
  EXPECT_EQ(transfers[0].consumer_task, 1);
  EXPECT_EQ(transfers[0].bytes, 100);
  EXPECT_EQ(transfers[1].from_worker, 1);
  EXPECT_EQ(transfers[1].to_worker, 0);
  EXPECT_EQ(transfers[1].bytes, 200);
}

TEST(PlanTest, ValidPlanPasses) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_NO_THROW(validate_plan(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph));
}

TEST(PlanValidationTest, RefusesAMissingTask) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_EQ(validation_error(make_plan({0, 1, 0, 0}, {{0, 3}, {1}}), graph),
            "plan: task \"c\" (placed on cpu) is missing from the orders");
}

TEST(PlanValidationTest, RefusesAnUnplacedTask) {
  const TaskGraph graph = graph_from_text(kDiamond);
  Plan plan = make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}});
  plan.tasks[2].task = -1;
  EXPECT_EQ(validation_error(plan, graph), "plan: task \"c\" is not placed");
}

TEST(PlanValidationTest, RefusesATaskListedTwice) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_THAT(validation_error(make_plan({0, 1, 0, 0}, {{0, 2, 3, 2}, {1}}), graph),
              HasSubstr("task \"c\" is listed twice"));
}

TEST(PlanValidationTest, RefusesATaskListedOnAnotherWorker) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_EQ(validation_error(make_plan({0, 1, 0, 0}, {{0, 3}, {1, 2}}), graph),
            "plan: task \"c\" is placed on cpu but listed in the order of gpu");
}

TEST(PlanValidationTest, RefusesANonexistentWorker) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_THAT(validation_error(make_plan({0, 5, 0, 0}, {{0, 2, 3}, {1}}), graph),
              HasSubstr("task \"b\" is placed on worker 5"));
}

TEST(PlanValidationTest, RefusesADeadlockingOrderNamingTasksAndWorkers) {
  const TaskGraph graph = graph_from_text(kDiamond);
  // d before c on the cpu, but d needs c's output.
  const std::string message = validation_error(make_plan({0, 1, 0, 0}, {{0, 3, 2}, {1}}), graph);
  EXPECT_THAT(message, HasSubstr("the worker orders deadlock"));
  EXPECT_THAT(message, HasSubstr("\"d\" on cpu waits for \"c\" on cpu (needs its output)"));
  EXPECT_THAT(message, HasSubstr("\"c\" on cpu waits for \"d\" on cpu (earlier in the same "
                                 "worker's order)"));
}

TEST(PlanValidationTest, RefusesADeadlockAcrossTwoWorkers) {
  // x -> y on different workers, y2 -> x2 likewise, with each worker's order reversed.
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "x", "time": [1, 1]}, {"name": "y", "time": [1, 1]},
              {"name": "u", "time": [1, 1]}, {"name": "v", "time": [1, 1]}],
    "edges": [["x", "y"], ["u", "v"]]})");
  // p runs v then x; q runs y then u: y needs x (after v), v needs u (after y).
  const std::string message = validation_error(make_plan({0, 1, 1, 0}, {{3, 0}, {1, 2}}), graph);
  EXPECT_THAT(message, HasSubstr("deadlock"));
  EXPECT_THAT(message, HasSubstr("on p"));
  EXPECT_THAT(message, HasSubstr("on q"));
}

TEST(PlanValidationTest, RefusesATaskOnADeviceItCannotRunOn) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_EQ(validation_error(make_plan({0, 0, 0, 1}, {{0, 1, 2}, {3}}), graph),
            "plan: task \"d\" is placed on gpu, where it cannot run (no time given)");
}

TEST(PlanValidationTest, RefusesWeightsBeyondDeviceMemory) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_THAT(validation_error(make_plan({0, 1, 1, 0}, {{0, 3}, {1, 2}}), graph),
              HasSubstr("the weights placed on gpu need 120 bytes, more than its memory of 100"));
}

TEST(PlanValidationTest, RefusesATransferWithoutALink) {
  TaskGraph graph = graph_from_text(kDiamond);
  graph.machine.bandwidth[1][0] = 0;
  EXPECT_EQ(validation_error(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph),
            "plan: \"b\" on gpu sends to \"d\" on cpu, but there is no link between them");
}

TEST(PlanValidationTest, SharedWeightGroupCountsOnce) {
  TaskGraph graph = graph_from_text(kDiamond);
  graph.tasks[1].weight_group = 7;
  graph.tasks[2].weight_group = 7;
  EXPECT_EQ(weight_bytes_per_worker(graph, {0, 1, 1, 0})[1], 60);
  EXPECT_NO_THROW(validate_plan(make_plan({0, 1, 1, 0}, {{0, 3}, {1, 2}}), graph));
}

TEST(PlanJsonTest, RoundTripWithGraphKeepsPlacementOrderAndTimes) {
  const TaskGraph graph = graph_from_text(kDiamond);
  Plan plan = make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}});
  plan.tasks[1].start = 1.5;
  plan.tasks[1].finish = 2.5;
  plan.makespan = 4.25;
  plan.objective = "throughput";
  plan.batch = 8;
  plan.notes["gap"] = 0.1;
  const nlohmann::json json = plan_to_json(plan, graph);
  EXPECT_EQ(json["tasks"][1]["task"], "b");
  EXPECT_EQ(json["tasks"][1]["worker"], "gpu");
  EXPECT_EQ(json["order"][0], (nlohmann::json{"a", "c", "d"}));
  EXPECT_EQ(json["transfers"].size(), 2u);
  const Plan again = plan_from_json(json, graph, "p.json");
  EXPECT_EQ(plan_to_json(again, graph), json);
  EXPECT_EQ(again.order, plan.order);
  EXPECT_EQ(again.batch, 8);
  EXPECT_EQ(again.notes["gap"], 0.1);
}

TEST(PlanJsonTest, RoundTripWithoutGraphUsesPositions) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const Plan plan = make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}});
  const Plan again = plan_from_json(plan_to_json(plan, graph), "p.json");
  EXPECT_EQ(again.order, plan.order);
  EXPECT_EQ(again.tasks[1].worker, 1);
  EXPECT_NO_THROW(validate_plan(again, graph));
}

TEST(PlanJsonTest, ReadingForAGraphValidates) {
  const TaskGraph graph = graph_from_text(kDiamond);
  nlohmann::json json = plan_to_json(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph);
  json["order"][0] = {"a", "d", "c"};
  try {
    plan_from_json(json, graph, "p.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("p.json: plan: the worker orders deadlock"));
  }
}

TEST(PlanJsonTest, UnknownWorkerNameIsReported) {
  const TaskGraph graph = graph_from_text(kDiamond);
  nlohmann::json json = plan_to_json(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph);
  json["tasks"][2]["worker"] = "tpu";
  try {
    plan_from_json(json, graph, "p.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.json: task \"c\": unknown worker \"tpu\"");
  }
}

TEST(PlanJsonTest, WriteAndReadFile) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const std::string path =
      (std::filesystem::temp_directory_path() / "cleave_plan_test.json").string();
  write_plan(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph, path);
  EXPECT_EQ(read_plan(path, graph).tasks[1].worker, 1);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cleave
