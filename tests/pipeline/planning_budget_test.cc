// The budgets that keep `auto`'s whole search near a second (issue 46): the spatial row
// searched on a bounded number of devices, and the planning-time line naming what was cut.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "machine/machine.h"
#include "modelgen/rwnn.h"
#include "pipeline/family_search.h"
#include "support/error.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

Graph small_rwnn() {
  RwnnOptions options;
  options.dag.modules = 2;
  options.dag.nodes_per_module = 8;
  options.channels = 4;
  options.height = 16;
  options.width = 16;
  return generate_rwnn(options);
}

// auto's whole table (plan_model, then the spatial and pipelined rows) on `devices` CPUs.
ModelPlan whole_table(const Graph& graph, int devices) {
  ModelPlanOptions options;
  options.machine = cpu_machine(devices, 1);
  const CostTable costs = static_costs(graph);
  ModelPlan plan = plan_model(graph, costs, options);
  add_split_and_stage_candidates(graph, costs, options, plan);
  return plan;
}

const PlanCandidate& spatial_row(const ModelPlan& plan) {
  const auto row = std::find_if(plan.candidates.begin(), plan.candidates.end(),
                                [](const PlanCandidate& c) { return c.family == "spatial"; });
  if (row == plan.candidates.end()) throw Error("no spatial row in the candidate table");
  return *row;
}

// Each partitioned graph costs a sub-graph of every node per device: on 64 devices the row
// builds at most two (the seconds and the terms search along H), each for 8 devices.
TEST(PlanningBudget, TheSpatialRowBuildsAtMostTwoSplitsOfEightDevicesOnSixtyFour) {
  const Graph graph = small_rwnn();
  const ModelPlan plan = whole_table(graph, 64);
  const PlanCandidate& row = spatial_row(plan);
  ASSERT_TRUE(std::isfinite(row.predicted_seconds)) << row.rejected;
  EXPECT_GE(row.searched, 1);
  EXPECT_LE(row.searched, 2);
  EXPECT_EQ(row.memory_bytes.size(), 8u);
  EXPECT_EQ(row.cut_short, "8 of 64 devices searched");
}

TEST(PlanningBudget, OnEveryDeviceTheSpatialRowIsNotCutShort) {
  const Graph graph = small_rwnn();
  const ModelPlan plan = whole_table(graph, 4);
  const PlanCandidate& row = spatial_row(plan);
  ASSERT_TRUE(std::isfinite(row.predicted_seconds)) << row.rejected;
  EXPECT_EQ(row.memory_bytes.size(), 4u);
  EXPECT_TRUE(row.cut_short.empty()) << row.cut_short;
}

TEST(PlanningBudget, ThePlanningTimeLineNamesTheFamiliesCutShort) {
  const Graph graph = small_rwnn();
  EXPECT_THAT(planning_time_text(whole_table(graph, 64)),
              HasSubstr("cut short by a budget: spatial (8 of 64 devices searched)"));
  EXPECT_THAT(planning_time_text(whole_table(graph, 4)), ::testing::Not(HasSubstr("cut short")));
}

}  // namespace
}  // namespace cleave
