// Each row of auto's candidate table says what its prediction used: node times (in context,
// busy core, analytical), the threads they were taken at, the convolution family and the links.
#include "frontend/candidate_costs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "frontend/auto_search.h"
#include "ir/text.h"
#include "machine/machine.h"
#include "small_graphs.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::four_branches;

// Each node 1 ms on 1 thread, 0.6 ms on 2 and more (up to `threads`); `source` and `context` as
// a profile's, and with `busy` seconds each node 1.5 ms on 1 thread beside 1 busy core (as a
// profile on 2 cores takes them).
CostTable fixed_costs(const Graph& graph, const std::string& source, const std::string& context,
                      bool busy, int threads = 4) {
  CostTable table;
  table.source = source;
  table.context = context;
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) {
    for (int t = 1; t <= threads; ++t) table.nodes[id].seconds.push_back(t == 1 ? 1e-3 : 0.6e-3);
    if (busy) table.nodes[id].busy_seconds = 1.5e-3;
    table.nodes[id].output_bytes = 256;
  }
  if (source == "profile") table.convolution_family = ConvolutionFamily::kBlocked;
  if (busy) table.busy_neighbours = 1;  // As on a 2-core host.
  return table;
}

ModelPlanOptions on_cores(int cores) {
  ModelPlanOptions options;
  options.workers = cores;
  options.threads_per_worker = 1;
  return options;
}

const PlanCandidate& row_of(const ModelPlan& plan, const std::string& configuration) {
  for (const PlanCandidate& row : plan.candidates)
    if (row.configuration == configuration) return row;
  throw Error("no row " + configuration);
}

TEST(CandidateCostsExplain, EveryPredictedRowOfTheJsonHasItsCosts) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true), on_cores(2));
  const nlohmann::json rows = candidates_to_json(plan.candidates);
  ASSERT_GE(rows.size(), 3u);
  for (const nlohmann::json& row : rows) {
    ASSERT_TRUE(row.contains("costs")) << row.dump();
    const nlohmann::json& costs = row["costs"];
    ASSERT_TRUE(costs.is_object()) << row.dump();
    EXPECT_TRUE(costs["source"].is_string()) << row.dump();
    EXPECT_GE(costs["threads"].get<int>(), 1) << row.dump();
    EXPECT_EQ(costs["conv_family"], "blocked") << row.dump();
    EXPECT_TRUE(costs["links"].is_string()) << row.dump();
  }
}

TEST(CandidateCostsExplain, ATwoWorkerRowIsPricedAtBusyCoreTimes) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true), on_cores(2));
  const CandidateCosts& costs = row_of(plan, "lc, 2 workers x 1 thread").costs;
  EXPECT_EQ(costs.source, "profile, busy core");
  EXPECT_EQ(costs.threads, (std::vector<int>{1, 1}));
  EXPECT_THAT(costs.links,
              HasSubstr("host hand-off (assumed, not measured): latency 2 us, 20 GB/s"));
}

TEST(CandidateCostsExplain, ASequentialRowNamesItsThreadCountAndNoLinks) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true), on_cores(2));
  const CandidateCosts& all = row_of(plan, "1 worker x 2 threads").costs;
  EXPECT_EQ(all.source, "profile in context");
  EXPECT_EQ(all.threads, std::vector<int>{2});
  EXPECT_EQ(all.links, "none");
  EXPECT_EQ(costs_text(all), "profile in context, 2 threads; convolutions blocked; links none");
  EXPECT_EQ(row_of(plan, "1 worker x 1 thread").costs.threads, std::vector<int>{1});
}

TEST(CandidateCostsExplain, AnalyticalCostsAreNamedAsSuch) {
  const Graph graph = four_branches();
  const ModelPlan plan = plan_auto(graph, fixed_costs(graph, "analytical", "", false), on_cores(2));
  const nlohmann::json rows = candidates_to_json(plan.candidates);
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row["costs"]["source"], "analytical") << row.dump();
    EXPECT_TRUE(row["costs"]["conv_family"].is_null()) << row.dump();
  }
}

TEST(CandidateCostsExplain, AProfileWithoutBusyTimesPricesWorkersAlone) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "alone", false), on_cores(2));
  EXPECT_EQ(row_of(plan, "lc, 2 workers x 1 thread").costs.source, "profile alone");
}

TEST(CandidateCostsExplain, BusyCoreTimesPastOneThreadNameTheirScaling) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true), on_cores(4));
  const CandidateCosts& costs = row_of(plan, "lc, 2 workers x 2 threads").costs;
  EXPECT_THAT(costs.source, HasSubstr("1-thread busy time x the node's own speedup"));
  EXPECT_EQ(costs.threads, (std::vector<int>{2, 2}));
  EXPECT_THAT(row_of(plan, "lc, 4 workers x 1 thread").costs.source, Not(HasSubstr("speedup")));
}

TEST(CandidateCostsExplain, MoreThreadsAtOnceThanTheProfileKeptBusyAreNamed) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true), on_cores(4));
  EXPECT_THAT(row_of(plan, "lc, 2 workers x 2 threads").costs.source,
              HasSubstr("; 4 threads at once, timed beside 1 busy core"));
  const ModelPlan two =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true), on_cores(2));
  EXPECT_THAT(row_of(two, "lc, 2 workers x 1 thread").costs.source, Not(HasSubstr("at once")));
}

TEST(CandidateCostsExplain, ThreadsPastTheProfilesAreTheLargestMeasured) {
  const Graph graph = four_branches();
  const ModelPlan plan =
      plan_auto(graph, fixed_costs(graph, "profile", "in-context", true, 2), on_cores(4));
  EXPECT_EQ(row_of(plan, "1 worker x 4 threads").costs.threads, std::vector<int>{2});
}

Machine linked_pair(double latency, double bandwidth) {
  Machine machine = cpu_machine(2, 1);
  for (int u = 0; u < 2; ++u) {
    for (int v = 0; v < 2; ++v) {
      machine.latency[u][v] = u == v ? 0 : latency;
      machine.bandwidth[u][v] = u == v ? 0 : bandwidth;
    }
  }
  return machine;
}

TEST(CandidateCostsExplain, AMachineFilesRowsNameItsLinks) {
  const Graph graph = four_branches();
  ModelPlanOptions options;
  options.machine = linked_pair(50e-6, 1e9);
  const ModelPlan plan = plan_auto(graph, fixed_costs(graph, "static", "", false), options);
  bool two_devices = false;
  for (const PlanCandidate& row : plan.candidates) {
    if (row.costs.threads.size() < 2) continue;
    two_devices = true;
    EXPECT_EQ(row.costs.links, "machine file: latency 50 us, 1 GB/s") << row.configuration;
    EXPECT_EQ(row.costs.source, "static weights") << row.configuration;
  }
  EXPECT_TRUE(two_devices);
}

TEST(CandidateCostsExplain, MachineFileSpeedsAreNamed) {
  const Graph graph = four_branches();
  ModelPlanOptions options;
  options.machine = linked_pair(2e-6, 2e10);
  options.machine->devices[0].speed = 2.0;
  const ModelPlan plan = plan_auto(graph, fixed_costs(graph, "static", "", false), options);
  EXPECT_EQ(plan.candidates.front().costs.source, "static weights, / machine file speeds");
}

TEST(CandidateCostsExplain, DevicesPricedByTheirRooflinesAreNamedSoAndTheirSpeedsAreNot) {
  const Graph graph = four_branches();
  ModelPlanOptions options;
  options.machine = linked_pair(2e-6, 2e10);
  for (Device& device : options.machine->devices) {
    device.speed = 0.5;
    device.roofline = Roofline{1e12, 1e11, 1e-6};
  }
  const ModelPlan plan = plan_auto(graph, fixed_costs(graph, "analytical", "", false), options);
  for (const PlanCandidate& row : plan.candidates)
    EXPECT_EQ(row.costs.source, "machine file rooflines") << row.configuration;
}

TEST(CandidateCostsExplain, ARowNeverPredictedHasNullCosts) {
  PlanCandidate row;
  row.family = "task";
  row.rejected = "no plan";
  EXPECT_TRUE(candidates_to_json({row})[0]["costs"].is_null());
  EXPECT_EQ(costs_text(row.costs), "not predicted");
}

TEST(CandidateCostsExplain, UnequalThreadsAreListedPerWorker) {
  CandidateCosts costs;
  costs.source = "profile in context";
  costs.threads = {3, 1};
  costs.links = "none";
  const nlohmann::json json = costs_to_json(costs);
  EXPECT_EQ(json["threads"], 3);
  EXPECT_EQ(json["threads_by_worker"], nlohmann::json({3, 1}));
  EXPECT_THAT(costs_text(costs), HasSubstr("3+1 threads"));
}

}  // namespace
}  // namespace cleave
