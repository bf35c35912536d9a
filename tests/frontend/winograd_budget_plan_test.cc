// A plan profiled in the Winograd family records which convolutions its budget left direct.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "runtime/winograd_budget.h"

namespace cleave {
namespace {

// A 3x3 convolution on a 32x32 map and one on a 2x2 map; weights without data (costs are static).
Graph two_maps() {
  return parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,16,32,32], %s: f32[1,16,2,2]) {
  @wb: f32[16,16,3,3]
  @ws: f32[16,16,3,3]
  %big: f32[1,16,32,32] = "big" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wb)
  %small: f32[1,16,2,2] = "small" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%s, @ws)
  return %big, %small
})");
}

TEST(WinogradBudgetPlan, NotesNameTheDirectConvolutions) {
  // Room for one of the two weights' Winograd copies, whichever kernel this ISA runs: each
  // adds (factor - 1) x its plain bytes, and the budget is 0.75 of that x both weights.
  const double fraction = 0.75 * (winograd_kernel_here().weight_factor - 1);
  setenv("CLEAVE_WINOGRAD_BUDGET", fmt::format("{}", fraction).c_str(), 1);
  const Graph graph = two_maps();
  CostTable costs = static_costs(graph);
  costs.convolution_family = ConvolutionFamily::kWinograd;
  ModelPlanOptions options;
  options.strategy = "sequential";
  const ModelPlan plan = plan_model(graph, costs, options);
  unsetenv("CLEAVE_WINOGRAD_BUDGET");
  ASSERT_TRUE(plan.plan.notes.contains("winograd_direct_nodes"));
  const nlohmann::json direct = plan.plan.notes["winograd_direct_nodes"];
  ASSERT_TRUE(direct.is_array());
  EXPECT_NE(std::find(direct.begin(), direct.end(), "small"), direct.end()) << direct.dump();
  EXPECT_EQ(std::find(direct.begin(), direct.end(), "big"), direct.end()) << direct.dump();
  EXPECT_NE(plan.plan.notes["winograd_budget"].get<std::string>().find("run direct"),
            std::string::npos);
}

TEST(WinogradBudgetPlan, OtherFamiliesHaveNoWinogradNotes) {
  const Graph graph = two_maps();
  CostTable costs = static_costs(graph);
  costs.convolution_family = ConvolutionFamily::kBlocked;
  ModelPlanOptions options;
  options.strategy = "sequential";
  EXPECT_FALSE(plan_model(graph, costs, options).plan.notes.contains("winograd_budget"));
}

}  // namespace
}  // namespace cleave
