// A calibrated host's hand-off costs price every plan of two or more workers made with the cost
// table that carries them, and say so; a table without them plans on the assumed links.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cost/cost_table.h"
#include "cost/hand_off_calibration.h"
#include "frontend/candidate_costs.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "machine/machine.h"
#include "plan/simulator.h"
#include "runtime/pinning.h"

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

TEST(HostLinksTest, TheCpuMachineTakesTheLinksItIsGiven) {
  const Machine machine = cpu_machine(2, 1, calibrated());
  EXPECT_EQ(machine.latency[0][1], 5e-6);
  EXPECT_EQ(machine.bandwidth[1][0], 1e9);
  EXPECT_EQ(machine.task_seconds, 3e-6);
  EXPECT_EQ(machine.run_seconds, 40e-6);
  EXPECT_EQ(machine.link_source, kCalibratedHostLinks);
  EXPECT_TRUE(machine.shared_memory);
  EXPECT_EQ(cpu_machine(2, 1).link_source, HostLinks{}.source);
  EXPECT_EQ(cpu_machine(2, 1).task_seconds, 0);
}

TEST(HostLinksTest, ATwoWorkerPlanChangesByTheCalibratedCosts) {
  const Graph graph = two_branches();
  const CostTable costs = static_costs(graph);
  const TaskGraph assumed = task_graph_for(graph, costs, cpu_machine(2, 1));
  const TaskGraph measured = task_graph_for(graph, costs, cpu_machine(2, 1, calibrated()));
  const Plan plan = placed(graph, assumed, true);
  const double before = simulate(plan, assumed).makespan;
  const double after = simulate(plan, measured).makespan;
  // Each worker's tasks one after another, the Add after b's hand-off: the latency delays it,
  // and it reads b's bytes from worker 1's cache as it runs (shared memory).
  const auto time = [&](const TaskGraph& tasks, const char* output) {
    return tasks.tasks[task_of(graph, tasks, output)].time[0];
  };
  const double bytes = assumed.tasks[task_of(graph, assumed, "b")].output_bytes;
  const auto makespan = [&](const TaskGraph& tasks, double latency, double bandwidth, double task,
                            double run) {
    const double a_end = time(tasks, "a") + task;
    const double b_there = time(tasks, "b") + task + latency;
    return std::max(a_end, b_there) + time(tasks, "y") + task + bytes / bandwidth + run;
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

TEST(HostLinksTest, AOneWorkerPlanPaysNoDispatchOrRunCost) {
  const Graph graph = two_branches();
  const CostTable costs = static_costs(graph);
  const TaskGraph assumed = task_graph_for(graph, costs, cpu_machine(2, 1));
  const TaskGraph measured = task_graph_for(graph, costs, cpu_machine(2, 1, calibrated()));
  const Plan plan = placed(graph, assumed, false);
  EXPECT_DOUBLE_EQ(simulate(plan, measured).makespan, simulate(plan, assumed).makespan);
}

TEST(HostLinksTest, TheTaskGraphFileKeepsTheLinksSourceAndOverheads) {
  const Graph graph = two_branches();
  const TaskGraph tasks =
      task_graph_for(graph, static_costs(graph), cpu_machine(2, 1, calibrated()));
  const TaskGraph read = task_graph_from_json(task_graph_to_json(tasks), "g.json");
  EXPECT_EQ(read.machine.link_source, kCalibratedHostLinks);
  EXPECT_EQ(read.machine.task_seconds, 3e-6);
  EXPECT_EQ(read.machine.run_seconds, 40e-6);
}

TEST(HostLinksTest, ANegativeTaskCostInATaskGraphFileIsRefusedByName) {
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

// The plan of a table whose cost context carries the calibration (a profile's).
CostTable calibrated_costs(const Graph& graph) {
  CostTable costs = static_costs(graph);
  costs.host_links = calibrated();
  return costs;
}

ModelPlan lc_plan(const Graph& graph, const CostTable& costs) {
  ModelPlanOptions options;
  options.strategy = "lc";
  options.workers = 2;
  return plan_model(graph, costs, options);
}

TEST(HostLinksTest, ATwoWorkerRowNamesTheCalibratedLinks) {
  const Graph graph = two_branches();
  const CostTable costs = calibrated_costs(graph);
  const ModelPlan plan = lc_plan(graph, costs);
  ASSERT_FALSE(plan.plan.order[1].empty()) << "lc should use both workers";
  EXPECT_EQ(plan.plan.notes["links"], kCalibratedHostLinks);
  EXPECT_THAT(describe_costs(costs, plan, false).links,
              HasSubstr("calibrated host hand-off: latency 5 us, 1 GB/s, 3 us per task, "
                        "40 us per run"));
}

// The calibration is the table's, not the process's: a plan on static costs made after one on
// a profile's table, in the same process, prices its hand-offs at the assumed links.
TEST(HostLinksTest, AStaticCostsPlanAfterAProfiledOneUsesTheAssumedLinks) {
  const Graph graph = two_branches();
  const ModelPlan profiled = lc_plan(graph, calibrated_costs(graph));
  ASSERT_EQ(profiled.tasks.machine.link_source, kCalibratedHostLinks);
  const ModelPlan assumed = lc_plan(graph, static_costs(graph));
  EXPECT_EQ(assumed.tasks.machine.link_source, HostLinks{}.source);
  EXPECT_EQ(assumed.tasks.machine.latency[0][1], HostLinks{}.latency);
  EXPECT_EQ(assumed.tasks.machine.task_seconds, 0);
  EXPECT_EQ(assumed.tasks.machine.run_seconds, 0);
}

// The same through the costs a command chooses: a profile's table calibrates (here: reads the
// calibration written in this test's cache), a static one after it in this process does not.
class ChosenCostsLinksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("cleave_host_links_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_ / "rates");
    setenv("CLEAVE_CACHE_DIR", folder_.c_str(), 1);
    // A loaded host would hold the profile up to 10 s waiting for free cores: nothing is timed.
    setenv("CLEAVE_CORE_WAIT_SECONDS", "0", 1);
    std::ofstream(folder_ / "rates" / (hand_off_cache_key() + ".json"))
        << host_links_to_json(calibrated(), {}).dump();
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    unsetenv("CLEAVE_CORE_WAIT_SECONDS");
    std::filesystem::remove_all(folder_);
  }
  std::filesystem::path folder_;
};

TEST_F(ChosenCostsLinksTest, AStaticCostsPlanAfterAProfiledOneUsesTheAssumedLinks) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "one core: no host hand-off to calibrate";
  const Graph graph = two_branches();
  ModelPlanOptions options;
  options.strategy = "lc";
  options.workers = 2;
  const CostedPlan profiled = plan_with_costs(graph, "profile", options, {});
  EXPECT_EQ(profiled.costs.host_links.source, kCalibratedHostLinks);
  EXPECT_EQ(profiled.plan.tasks.machine.link_source, kCalibratedHostLinks);
  EXPECT_EQ(profiled.plan.tasks.machine.task_seconds, 3e-6);
  const CostedPlan assumed = plan_with_costs(graph, "static", options, {});
  EXPECT_EQ(assumed.plan.tasks.machine.link_source, HostLinks{}.source);
  EXPECT_EQ(assumed.plan.tasks.machine.latency[0][1], HostLinks{}.latency);
  EXPECT_EQ(assumed.plan.tasks.machine.run_seconds, 0);
}

}  // namespace
}  // namespace cleave
