// ModelPlanOptions::each_node_once: the one `auto` without the planners that copy nodes.
#include <gtest/gtest.h>

#include <set>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "modelgen/inception.h"

namespace cleave {
namespace {

// Two Inception blocks: independent branches, so lc and clone both plan two workers.
Graph branchy() {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 16;
  options.height = 8;
  options.width = 8;
  return generate_inception(options);
}

// Each node of the graph appears in exactly one task of the plan.
void expect_each_node_once(const ModelPlan& plan, const Graph& graph) {
  std::multiset<NodeId> nodes;
  for (const Task& task : plan.tasks.tasks) nodes.insert(task.node);
  for (NodeId id : graph.node_ids()) EXPECT_EQ(nodes.count(id), 1u) << graph.node(id).name;
}

TEST(EachNodeOnce, AutoLeavesOutThePlannersThatCopyNodes) {
  const Graph graph = branchy();
  ModelPlanOptions options;
  options.each_node_once = true;
  const ModelPlan plan = plan_model(graph, static_costs(graph), options);
  std::set<std::string> compared;
  for (const PlanCandidate& candidate : plan.candidates) compared.insert(candidate.strategy);
  EXPECT_EQ(compared, (std::set<std::string>{"sequential", "lc"}));
  expect_each_node_once(plan, graph);
}

TEST(EachNodeOnce, WithoutItAutoAlsoComparesCloning) {
  const Graph graph = branchy();
  const ModelPlan plan = plan_model(graph, static_costs(graph), ModelPlanOptions{});
  std::set<std::string> compared;
  for (const PlanCandidate& candidate : plan.candidates) compared.insert(candidate.strategy);
  EXPECT_TRUE(compared.count("clone"));
}

TEST(EachNodeOnce, ANamedCloningPlannerPlansAsThePlannerItCopiesFrom) {
  const Graph graph = branchy();
  ModelPlanOptions options;
  options.strategy = "clone";
  options.each_node_once = true;
  const ModelPlan plan = plan_model(graph, static_costs(graph), options);
  EXPECT_EQ(plan.plan.strategy, "lc");
  expect_each_node_once(plan, graph);
}

// A generated rank program of a stream: each node once per sample, each worker its samples one
// after another. Auto keeps sequential, data-parallel and the stages, not the hyperclusters.
TEST(EachNodeOnce, WithSamplesAutoLeavesOutTheHyperclustersThatInterleaveThem) {
  const Graph graph = branchy();
  ModelPlanOptions options;
  options.each_node_once = true;
  options.samples = 4;
  options.machine = cpu_workers(2, 1);
  const ModelPlan plan = plan_model(graph, static_costs(graph), options);
  std::set<std::string> families;
  for (const PlanCandidate& candidate : plan.candidates) families.insert(candidate.family);
  EXPECT_EQ(families, (std::set<std::string>{"sequential", "data-parallel", "pipeline"}));
  ModelPlanOptions free = options;
  free.each_node_once = false;
  std::set<std::string> strategies;
  for (const PlanCandidate& candidate : plan_model(graph, static_costs(graph), free).candidates)
    strategies.insert(candidate.strategy);
  EXPECT_TRUE(strategies.count("hypercluster"));
}

}  // namespace
}  // namespace cleave
