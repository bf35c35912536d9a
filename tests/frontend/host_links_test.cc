// A calibrated host's hand-off costs price every plan of two or more workers, and say so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cost/cost_table.h"
#include "cost/hand_off_calibration.h"
#include "frontend/candidate_costs.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "machine/machine.h"
#include "plan/simulator.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Two branches of x joined by an Add: one branch per worker, one hand-off.
Graph two_branches() {
  return parse_graph(R"(graph g (%x: f32[1,256]) {
  %a = Relu(%x)
  %b = Sigmoid(%x)
  %y = Add(%a, %b)
  return %y
})");
}

HostLinks calibrated() {
  HostLinks links;
  links.latency = 5e-6;
  links.bandwidth = 1e9;
  links.task_seconds = 3e-6;
  links.run_seconds = 40e-6;
  links.source = kCalibratedHostLinks;
  return links;
}

int task_of(const Graph& graph, const TaskGraph& tasks, const std::string& output) {
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t)
    if (graph.value(graph.node(tasks.tasks[t].node).outputs[0]).name == output)
      return static_cast<int>(t);
  throw Error("no task makes " + output);
}

// a and the Add on worker 0, b on worker 1 (or every task on worker 0).
Plan placed(const Graph& graph, const TaskGraph& tasks, bool split) {
  Plan plan;
  plan.order.resize(2);
  plan.tasks.resize(tasks.tasks.size());
  for (const char* output : {"a", "b", "y"}) {
    const int t = task_of(graph, tasks, output);
    const int worker = split && std::string(output) == "b" ? 1 : 0;
    plan.order[worker].push_back(t);
    plan.tasks[t] = {t, worker, 0, 0};
  }
  return plan;
}

class HostLinksTest : public ::testing::Test {
 protected:
  void TearDown() override { reset_host_links(); }
};

TEST_F(HostLinksTest, TheCpuMachineTakesTheInstalledLinks) {
  set_host_links(calibrated());
  const Machine machine = cpu_machine(2, 1);
  EXPECT_EQ(machine.latency[0][1], 5e-6);
  EXPECT_EQ(machine.bandwidth[1][0], 1e9);
  EXPECT_EQ(machine.task_seconds, 3e-6);
  EXPECT_EQ(machine.run_seconds, 40e-6);
  EXPECT_EQ(machine.link_source, kCalibratedHostLinks);
  reset_host_links();
  EXPECT_EQ(cpu_machine(2, 1).link_source, HostLinks{}.source);
  EXPECT_EQ(cpu_machine(2, 1).task_seconds, 0);
}

TEST_F(HostLinksTest, ATwoWorkerPlanChangesByTheCalibratedCosts) {
  const Graph graph = two_branches();
  const CostTable costs = static_costs(graph);
  const TaskGraph assumed = task_graph_for(graph, costs, cpu_machine(2, 1));
  set_host_links(calibrated());
  const TaskGraph measured = task_graph_for(graph, costs, cpu_machine(2, 1));
  const Plan plan = placed(graph, assumed, true);
  const double before = simulate(plan, assumed).makespan;
  const double after = simulate(plan, measured).makespan;
  // Each worker's tasks one after another, the Add after b's hand-off.
  const auto time = [&](const TaskGraph& tasks, const char* output) {
    return tasks.tasks[task_of(graph, tasks, output)].time[0];
  };
  const double bytes = assumed.tasks[task_of(graph, assumed, "b")].output_bytes;
  const auto makespan = [&](const TaskGraph& tasks, double latency, double bandwidth, double task,
                            double run) {
    const double a_end = time(tasks, "a") + task;
    const double b_there = time(tasks, "b") + task + latency + bytes / bandwidth;
    return std::max(a_end, b_there) + time(tasks, "y") + task + run;
  };
  const HostLinks links = calibrated();
  const HostLinks guess;
  EXPECT_NEAR(
      after - before,
      makespan(measured, links.latency, links.bandwidth, links.task_seconds, links.run_seconds) -
          makespan(assumed, guess.latency, guess.bandwidth, 0, 0),
      1e-12);
  EXPECT_GT(after, before);
}

TEST_F(HostLinksTest, AOneWorkerPlanPaysNoDispatchOrRunCost) {
  const Graph graph = two_branches();
  const CostTable costs = static_costs(graph);
  const TaskGraph assumed = task_graph_for(graph, costs, cpu_machine(2, 1));
  set_host_links(calibrated());
  const TaskGraph measured = task_graph_for(graph, costs, cpu_machine(2, 1));
  const Plan plan = placed(graph, assumed, false);
  EXPECT_DOUBLE_EQ(simulate(plan, measured).makespan, simulate(plan, assumed).makespan);
}

TEST_F(HostLinksTest, TheTaskGraphFileKeepsTheLinksSourceAndOverheads) {
  set_host_links(calibrated());
  const Graph graph = two_branches();
  const TaskGraph tasks = task_graph_for(graph, static_costs(graph), cpu_machine(2, 1));
  const TaskGraph read = task_graph_from_json(task_graph_to_json(tasks), "g.json");
  EXPECT_EQ(read.machine.link_source, kCalibratedHostLinks);
  EXPECT_EQ(read.machine.task_seconds, 3e-6);
  EXPECT_EQ(read.machine.run_seconds, 40e-6);
}

TEST_F(HostLinksTest, ANegativeTaskCostInATaskGraphFileIsRefusedByName) {
  const Graph graph = two_branches();
  nlohmann::json json =
      task_graph_to_json(task_graph_for(graph, static_costs(graph), cpu_machine(2, 1)));
  json["task_seconds"] = -1;
  try {
    task_graph_from_json(json, "g.json");
    FAIL() << "a negative task cost was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("g.json: task_seconds"));
  }
}

TEST_F(HostLinksTest, ATwoWorkerRowNamesTheCalibratedLinks) {
  set_host_links(calibrated());
  const Graph graph = two_branches();
  ModelPlanOptions options;
  options.strategy = "lc";
  options.workers = 2;
  const ModelPlan plan = plan_model(graph, static_costs(graph), options);
  ASSERT_FALSE(plan.plan.order[1].empty()) << "lc should use both workers";
  EXPECT_EQ(plan.plan.notes["links"], kCalibratedHostLinks);
  EXPECT_THAT(describe_costs(static_costs(graph), plan, false).links,
              HasSubstr("calibrated host hand-off: latency 5 us, 1 GB/s, 3 us per task, "
                        "40 us per run"));
}

}  // namespace
}  // namespace cleave
