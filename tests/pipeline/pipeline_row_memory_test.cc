// The pipelined row of auto's table carries each stage worker's memory: its weights and the
// activations it holds with its samples in flight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "modelgen/rwnn.h"
#include "pipeline/family_search.h"
#include "pipeline/pipeline_run.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Graph small_rwnn() {
  RwnnOptions options;
  options.dag.modules = 2;
  options.dag.nodes_per_module = 8;
  options.channels = 4;
  options.height = 16;
  options.width = 16;
  return generate_rwnn(options);
}

PlanCandidate pipeline_row(const Graph& graph, int samples, int cores = 4) {
  ModelPlanOptions options;
  options.workers = cores;
  options.samples = samples;
  return pipeline_candidate(graph, static_costs(graph), options);
}

int stages_of(const PlanCandidate& row) {
  const auto stages = parse_pipeline_configuration(row.configuration);
  return stages ? stages->first : 0;
}

TEST(PipelineRowMemory, EveryStageWorkerHasItsWeightsAndActivations) {
  const Graph graph = small_rwnn();
  const PlanCandidate row = pipeline_row(graph, 8);
  const auto stages = static_cast<std::size_t>(stages_of(row));
  ASSERT_GE(stages, 2u) << row.configuration;
  ASSERT_EQ(row.activation_bytes.size(), stages);
  ASSERT_EQ(row.memory_bytes.size(), stages);
  for (std::size_t s = 0; s < stages; ++s) EXPECT_GT(row.activation_bytes[s], 0) << s;
  // Every weight lies on exactly one stage.
  const CostTable costs = static_costs(graph);
  double weights = 0;
  for (NodeId id : graph.node_ids()) weights += costs.nodes[id].weight_bytes;
  EXPECT_DOUBLE_EQ(std::accumulate(row.memory_bytes.begin(), row.memory_bytes.end(), 0.0), weights);
}

TEST(PipelineRowMemory, SamplesInFlightAddTheQueuedInputsOfLaterStages) {
  const Graph graph = small_rwnn();
  // On 2 cores the only cut is 2 stages, whatever the samples.
  const PlanCandidate one = pipeline_row(graph, 1, 2);
  const PlanCandidate many = pipeline_row(graph, 8, 2);
  ASSERT_EQ(one.configuration, many.configuration);
  ASSERT_EQ(one.activation_bytes.size(), many.activation_bytes.size());
  EXPECT_EQ(many.activation_bytes.front(), one.activation_bytes.front());
  for (std::size_t s = 1; s < many.activation_bytes.size(); ++s)
    EXPECT_GT(many.activation_bytes[s], one.activation_bytes[s]) << s;
}

TEST(PipelineRowMemory, TheTableFooterNoLongerExceptsPipelineRows) {
  ModelPlan plan;
  plan.candidates.push_back(pipeline_row(small_rwnn(), 8));
  const std::string text = candidate_table_text(plan);
  EXPECT_THAT(text, Not(HasSubstr("weights only")));
  EXPECT_THAT(text, Not(HasSubstr(" - ")));
}

}  // namespace
}  // namespace cleave
