// Randomly wired networks: one Relu + Conv per DAG node and Adds where inputs meet.
#include "modelgen/rwnn.h"

#include <gtest/gtest.h>

#include <set>

#include "ir/verify.h"

namespace cleave {
namespace {

RwnnOptions small_rwnn(ChannelDependence dependence) {
  RwnnOptions options;
  options.dag.modules = 3;
  options.dag.nodes_per_module = 8;
  options.dag.min_channels = options.dag.max_channels = 2;
  options.dag.dependence = dependence;
  options.channels = 4;
  options.height = options.width = 8;
  return options;
}

TEST(Rwnn, NodeCountFollowsTheDag) {
  RwnnOptions options = small_rwnn(ChannelDependence::kStrong);
  RandomDag dag = generate_random_dag(options.dag);
  Graph graph = build_rwnn(dag, options);
  const auto predecessors = dag.predecessors();
  std::size_t expected = 1 + 3;  // stem; pool, flatten, gemm
  std::size_t adds = 0;
  for (int v = 0; v < dag.node_count; ++v) {
    const std::size_t inputs = predecessors[v].size() + (v == 0 ? 1 : 0);
    expected += inputs + 1;  // inputs - 1 adds, relu, conv
    adds += inputs - 1;
  }
  EXPECT_EQ(graph.node_count(), expected);
  std::size_t graph_adds = 0;
  for (NodeId id : graph.node_ids()) graph_adds += graph.node(id).op_type == "Add";
  EXPECT_EQ(graph_adds, adds);
}

std::string node_name(const RandomDag& dag, int v) {
  return "m" + std::to_string(dag.module_of(v)) + "_n" + std::to_string(v % dag.nodes_per_module);
}

// Producers of the values summed (through a tree of Adds) into `value`.
void summed_producers(const Graph& graph, ValueId value, std::multiset<std::string>& out) {
  const Node& producer = graph.node(graph.value(value).producer);
  if (producer.op_type != "Add") {
    out.insert(producer.name);
    return;
  }
  for (ValueId input : producer.inputs) summed_producers(graph, input, out);
}

TEST(Rwnn, EachNodeSumsExactlyItsDagPredecessors) {
  for (auto dependence : {ChannelDependence::kStrong, ChannelDependence::kWeak}) {
    RwnnOptions options = small_rwnn(dependence);
    RandomDag dag = generate_random_dag(options.dag);
    Graph graph = build_rwnn(dag, options);
    const auto predecessors = dag.predecessors();
    for (int v = 0; v < dag.node_count; ++v) {
      std::multiset<std::string> expected;
      if (v == 0) expected.insert("stem");
      for (int u : predecessors[v]) expected.insert(node_name(dag, u));
      const Node& relu = graph.node(*graph.find_node(node_name(dag, v) + "_relu"));
      std::multiset<std::string> actual;
      summed_producers(graph, relu.inputs[0], actual);
      EXPECT_EQ(actual, expected) << node_name(dag, v);
    }
    EXPECT_NO_THROW(verify_graph(graph));
  }
}

TEST(Rwnn, ShapesAreStaticAndTheOutputIsTheClassifier) {
  Graph graph = generate_rwnn(small_rwnn(ChannelDependence::kStrong));
  for (NodeId id : graph.node_ids()) {
    EXPECT_TRUE(graph.value(graph.node(id).outputs[0]).shape.is_static());
  }
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, Shape::of({1, 10}));
  EXPECT_EQ(graph.value(*graph.find_value("m2_n7")).shape, Shape::of({1, 4, 8, 8}));
}

}  // namespace
}  // namespace cleave
