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

// A 3x3 convolution on a 32x32 map and one on an 8x8 map; weights without data (costs are
// static).
Graph two_maps() {
  return parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,16,32,32], %s: f32[1,16,8,8]) {
  @wb: f32[16,16,3,3]
  @ws: f32[16,16,3,3]
  %big: f32[1,16,32,32] = "big" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wb)
  %small: f32[1,16,8,8] = "small" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%s, @ws)
  return %big, %small
})");
}

TEST(WinogradBudgetPlan, NotesNameTheDirectConvolutions) {
  // Room for the first weight's Winograd copy and half the second's, whichever kernel (and
  // so weight size) this ISA runs.
  const WinogradSelection all = select_winograd(two_maps(), WinogradBudget{std::nullopt, 0}, 1);
  ASSERT_EQ(all.kept.size(), 2u);
  const double fraction =
      (all.kept[0].extra_bytes + all.kept[1].extra_bytes / 2) / all.plain_weight_bytes;
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

TEST(WinogradBudgetPlan, NotesNameTheSmallMapsRunDirectWithNoBudget) {
  const Graph graph =
      parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,16,32,32], %s: f32[1,16,2,2]) {
  @wb: f32[16,16,3,3]
  @ws: f32[16,16,3,3]
  %big: f32[1,16,32,32] = "big" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wb)
  %small: f32[1,16,2,2] = "small" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%s, @ws)
  return %big, %small
})");
  setenv("CLEAVE_WINOGRAD_BUDGET", "none", 1);
  CostTable costs = static_costs(graph);
  costs.convolution_family = ConvolutionFamily::kWinograd;
  ModelPlanOptions options;
  options.strategy = "sequential";
  const ModelPlan plan = plan_model(graph, costs, options);
  unsetenv("CLEAVE_WINOGRAD_BUDGET");
  const nlohmann::json direct = plan.plan.notes["winograd_direct_nodes"];
  ASSERT_TRUE(direct.is_array());
  EXPECT_EQ(direct, nlohmann::json::array({"small"})) << direct.dump();
  EXPECT_NE(
      plan.plan.notes["winograd_budget"].get<std::string>().find("1 more on small maps run direct"),
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
