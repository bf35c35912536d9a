// Randomly wired DAGs: module and channel structure, sdep and wdep endpoints, graph models.
#include "modelgen/random_dag.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ir/graph.h"

namespace cleave {
namespace {

// Sources and sinks of module `t` counting only the edges inside it.
std::pair<std::vector<int>, std::vector<int>> module_sources_and_sinks(const RandomDag& dag,
                                                                       int t) {
  const int n = dag.nodes_per_module;
  std::vector<int> in(n, 0), out(n, 0);
  for (auto [a, b] : dag.edges) {
    if (dag.module_of(a) == t && dag.module_of(b) == t) {
      ++out[a - t * n];
      ++in[b - t * n];
    }
  }
  std::vector<int> sources, sinks;
  for (int i = 0; i < n; ++i) {
    if (in[i] == 0) sources.push_back(t * n + i);
    if (out[i] == 0) sinks.push_back(t * n + i);
  }
  return {sources, sinks};
}

RandomDagOptions rwnn_options(ChannelDependence dependence, int channels) {
  RandomDagOptions options;
  options.modules = 5;
  options.nodes_per_module = 12;
  options.min_channels = options.max_channels = channels;
  options.dependence = dependence;
  options.seed = 11;
  return options;
}

TEST(RandomDag, ModulesAreJoinedOnlyByTheirChannelEdges) {
  RandomDag dag = generate_random_dag(rwnn_options(ChannelDependence::kStrong, 3));
  EXPECT_EQ(dag.node_count, 60);
  ASSERT_EQ(dag.channel_edges.size(), 4u * 3);
  std::set<std::pair<int, int>> channels(dag.channel_edges.begin(), dag.channel_edges.end());
  for (auto [a, b] : dag.edges) {
    if (dag.module_of(a) != dag.module_of(b)) {
      EXPECT_EQ(dag.module_of(b), dag.module_of(a) + 1);
      EXPECT_TRUE(channels.count({a, b})) << a << "->" << b;
    }
  }
  for (int t = 0; t + 1 < 5; ++t) {
    EXPECT_EQ(dag.module_outputs[t].size(), 3u);
    EXPECT_EQ(dag.module_inputs[t + 1].size(), 3u);
  }
  EXPECT_EQ(dag.module_inputs.front().size(), 1u);
  EXPECT_EQ(dag.module_outputs.back().size(), 1u);
}

TEST(RandomDag, StrongDependenceMakesEndpointsTheSourcesAndSinks) {
  RandomDag dag = generate_random_dag(rwnn_options(ChannelDependence::kStrong, 3));
  for (int t = 0; t < 5; ++t) {
    auto [sources, sinks] = module_sources_and_sinks(dag, t);
    EXPECT_EQ(sources, dag.module_inputs[t]) << "module " << t;
    EXPECT_EQ(sinks, dag.module_outputs[t]) << "module " << t;
  }
}

TEST(RandomDag, WeakDependenceTiesLooseEndsToEndpointsPlacedAnywhere) {
  bool some_input_mid_module = false;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    RandomDagOptions options = rwnn_options(ChannelDependence::kWeak, 3);
    options.seed = seed;
    RandomDag dag = generate_random_dag(options);
    for (int t = 0; t < 5; ++t) {
      auto [sources, sinks] = module_sources_and_sinks(dag, t);
      for (int s : sources) EXPECT_TRUE(std::ranges::count(dag.module_inputs[t], s)) << s;
      for (int s : sinks) EXPECT_TRUE(std::ranges::count(dag.module_outputs[t], s)) << s;
      for (int input : dag.module_inputs[t]) {
        some_input_mid_module |= !std::ranges::count(sources, input);
      }
    }
  }
  // Under sdep no input ever has a predecessor inside its module; wdep samples them anywhere.
  EXPECT_TRUE(some_input_mid_module);
}

TEST(RandomDag, WholeDagHasOneSourceAndOneSink) {
  for (auto dependence : {ChannelDependence::kStrong, ChannelDependence::kWeak}) {
    RandomDag dag = generate_random_dag(rwnn_options(dependence, 2));
    auto predecessors = dag.predecessors();
    auto successors = dag.successors();
    int sources = 0, sinks = 0;
    for (int v = 0; v < dag.node_count; ++v) {
      sources += predecessors[v].empty();
      sinks += successors[v].empty();
    }
    EXPECT_EQ(sources, 1);
    EXPECT_EQ(sinks, 1);
    EXPECT_EQ(dag.topological_order().size(), 60u);  // acyclic
  }
}

TEST(RandomDag, ChannelRangeIsDrawnPerBoundary) {
  RandomDagOptions options = rwnn_options(ChannelDependence::kStrong, 1);
  options.modules = 20;
  options.min_channels = 1;
  options.max_channels = 3;
  RandomDag dag = generate_random_dag(options);
  std::set<std::size_t> counts;
  for (int t = 0; t + 1 < 20; ++t) {
    counts.insert(dag.module_outputs[t].size());
    EXPECT_EQ(dag.module_outputs[t].size(), dag.module_inputs[t + 1].size());
  }
  EXPECT_EQ(counts, (std::set<std::size_t>{1, 2, 3}));
}

TEST(RandomDag, ErdosRenyiWithPOneIsComplete) {
  RandomDagOptions options;
  options.nodes_per_module = 6;
  options.probability = 1.0;
  EXPECT_EQ(generate_random_dag(options).edges.size(), 15u);
}

TEST(RandomDag, WattsStrogatzWithoutRewiringIsTheRingLattice) {
  RandomDagOptions options;
  options.model = RandomGraphModel::kWattsStrogatz;
  options.nodes_per_module = 10;
  options.ws_neighbors = 4;
  options.probability = 0;
  // 10 nodes x 2 neighbours to the right; every node but 0 has a lower neighbour and every
  // node but 9 a higher one, so no edge is added for loose ends.
  EXPECT_EQ(generate_random_dag(options).edges.size(), 20u);
}

TEST(RandomDag, BarabasiAlbertNodesLinkToMEarlierNodes) {
  RandomDagOptions options;
  options.model = RandomGraphModel::kBarabasiAlbert;
  options.nodes_per_module = 16;
  options.ba_attachments = 3;
  RandomDag dag = generate_random_dag(options);
  auto predecessors = dag.predecessors();
  for (int v = 3; v < 16; ++v) EXPECT_GE(predecessors[v].size(), 3u) << v;
}

TEST(RandomDag, SameSeedSameDagDifferentSeedDifferentDag) {
  RandomDagOptions options = rwnn_options(ChannelDependence::kWeak, 2);
  EXPECT_EQ(generate_random_dag(options).edges, generate_random_dag(options).edges);
  RandomDagOptions other = options;
  other.seed = 12;
  EXPECT_NE(generate_random_dag(options).edges, generate_random_dag(other).edges);
}

TEST(RandomDag, RejectsMoreChannelsThanAModuleCanHold) {
  RandomDagOptions options = rwnn_options(ChannelDependence::kStrong, 7);  // 14 > 12 nodes
  EXPECT_THROW(generate_random_dag(options), Error);
}

TEST(RandomDag, ParsesTheCliSpellings) {
  EXPECT_EQ(parse_random_graph_model("ws"), RandomGraphModel::kWattsStrogatz);
  EXPECT_EQ(parse_channel_dependence("wdep"), ChannelDependence::kWeak);
  EXPECT_THROW(parse_random_graph_model("grid"), Error);
}

}  // namespace
}  // namespace cleave
