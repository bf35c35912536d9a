// `plan --explain`'s table keys each row to what its prediction used, in a legend below it;
// the pipelined row names its busy-core costs and unpriced hand-offs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cost/cost_table.h"
#include "frontend/candidate_costs.h"
#include "frontend/model_plan.h"
#include "ir/text.h"
#include "pipeline/family_search.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

Graph chain_of_four() {
  return parse_graph(R"(graph g (%x: f32[1,64]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %c = Tanh(%b)
  %y = Exp(%c)
  return %y
}
)");
}

// A profile in context: 1 ms per node on 1 thread, 0.6 ms on 2, 1.5 ms on 1 beside busy cores.
CostTable in_context(const Graph& graph) {
  CostTable table;
  table.source = "profile";
  table.context = "in-context";
  table.convolution_family = ConvolutionFamily::kBlocked;
  table.nodes.resize(graph.node_capacity());
  for (NodeId id : graph.node_ids()) {
    table.nodes[id].seconds = {1e-3, 0.6e-3};
    table.nodes[id].busy_seconds = 1.5e-3;
    table.nodes[id].output_bytes = 256;
  }
  return table;
}

TEST(ExplainCosts, ThePipelineRowIsPricedAtBusyCoreTimesWithoutHandOffs) {
  const Graph graph = chain_of_four();
  ModelPlanOptions options;
  options.workers = 2;
  options.samples = 4;
  const PlanCandidate row = pipeline_candidate(graph, in_context(graph), options);
  ASSERT_EQ(row.configuration, "2 stages x 1 thread");
  EXPECT_EQ(row.costs.source, "profile, busy core");
  EXPECT_EQ(row.costs.threads, (std::vector<int>{1, 1}));
  EXPECT_EQ(row.costs.links, "hand-offs between stages not priced");
}

TEST(ExplainCosts, TheTableKeysEachRowToALegendOfItsCosts) {
  const Graph graph = chain_of_four();
  ModelPlanOptions options;
  options.workers = 2;
  options.samples = 4;
  ModelPlan plan = plan_model(graph, in_context(graph), options);
  add_split_and_stage_candidates(graph, in_context(graph), options, plan);
  const std::string text = candidate_table_text(plan);
  EXPECT_THAT(text, HasSubstr(" costs "));
  EXPECT_THAT(text, HasSubstr("    a = profile in context, 2 threads; convolutions blocked; "
                              "links none\n"));
  EXPECT_THAT(text, HasSubstr("= profile, busy core, 1 thread; convolutions blocked; links "
                              "hand-offs between stages not priced\n"));
  // Each description once, however many rows share it.
  const std::string busy = "= profile, busy core, 1 thread; convolutions blocked; links host";
  EXPECT_EQ(text.find(busy), text.rfind(busy));
}

}  // namespace
}  // namespace cleave
