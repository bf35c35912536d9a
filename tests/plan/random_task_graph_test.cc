// The seeded random DAG generator used by property tests and the MILP tests.
#include "plan/random_task_graph.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace cleave {
namespace {

TEST(RandomTaskGraphTest, SameSeedSameGraph) {
  EXPECT_EQ(task_graph_to_json(random_task_graph(7)), task_graph_to_json(random_task_graph(7)));
}

TEST(RandomTaskGraphTest, DifferentSeedsDiffer) {
  EXPECT_NE(task_graph_to_json(random_task_graph(7)), task_graph_to_json(random_task_graph(8)));
}

TEST(RandomTaskGraphTest, HasTheRequestedShapeAndPassesChecks) {
  RandomTaskGraphOptions options;
  options.tasks = 25;
  options.devices = 4;
  options.unrunnable_probability = 0.3;
  options.memory_fraction = 0.5;
  const TaskGraph graph = random_task_graph(3, options);
  EXPECT_EQ(graph.tasks.size(), 25u);
  EXPECT_EQ(graph.machine.size(), 4u);
  EXPECT_NO_THROW(graph.check("random"));
  for (const auto& [from, to] : graph.edges) EXPECT_LT(from, to);
  EXPECT_TRUE(std::isfinite(graph.machine.devices[0].memory_bytes));
}

TEST(RandomTaskGraphTest, SurvivesAJsonRoundTrip) {
  const TaskGraph graph = random_task_graph(11);
  const nlohmann::json json = task_graph_to_json(graph);
  EXPECT_EQ(task_graph_to_json(task_graph_from_json(json, "random")), json);
}

}  // namespace
}  // namespace cleave
