// Randomly wired DAGs as in DiviML: random-graph modules chained by a few channel edges.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cleave {

/// How a module's undirected random graph is drawn (RandWire's three generators).
enum class RandomGraphModel {
  kErdosRenyi,      ///< ER(p): every pair joined with probability p.
  kWattsStrogatz,   ///< WS(k, p): ring lattice of k neighbours, each edge rewired with prob. p.
  kBarabasiAlbert,  ///< BA(m): preferential attachment, m edges per new node.
};

/// Where the channel endpoints of a module sit (DiviML, Fig. 2 and Sec. V-B).
enum class ChannelDependence {
  /// Strongly dependent: the input endpoints are exactly the module's sources and the output
  /// endpoints exactly its sinks, so every path in the module starts at an input and ends at
  /// an output.
  kStrong,
  /// Weakly dependent: the endpoints are randomly sampled module nodes, which may sit in the
  /// middle of the module; the other sources and sinks are tied to a randomly chosen endpoint.
  kWeak,
};

struct RandomDagOptions {
  RandomGraphModel model = RandomGraphModel::kErdosRenyi;
  int modules = 1;
  int nodes_per_module = 10;
  double probability = 0.2;  ///< ER: edge probability; WS: rewiring probability.
  int ws_neighbors = 4;      ///< WS: k, each node's ring neighbours (k/2 on each side).
  int ba_attachments = 5;    ///< BA: m, edges from each new node.
  /// Channels between consecutive modules, drawn uniformly from [min, max] per boundary.
  int min_channels = 1;
  int max_channels = 1;
  ChannelDependence dependence = ChannelDependence::kStrong;
  uint64_t seed = 1;
};

/// A DAG of `node_count` nodes. Module t holds nodes [t*n, (t+1)*n) for n nodes per module.
/// The first module has one input endpoint (the network entry) and the last one output
/// endpoint (the exit), so the whole DAG has a single source and a single sink.
struct RandomDag {
  int node_count = 0;
  int nodes_per_module = 0;
  /// Every edge (from, to), intra-module edges first (sorted), then the channel edges.
  std::vector<std::pair<int, int>> edges;
  /// The channel edges between module t and t+1: outputs[t][i] -> inputs[t+1][i].
  std::vector<std::pair<int, int>> channel_edges;
  std::vector<std::vector<int>> module_inputs;   ///< Per module, its input endpoints (sorted).
  std::vector<std::vector<int>> module_outputs;  ///< Per module, its output endpoints (sorted).

  int module_of(int node) const { return node / nodes_per_module; }
  std::vector<std::vector<int>> predecessors() const;
  std::vector<std::vector<int>> successors() const;
  /// Kahn order, ties broken by the smaller node id.
  std::vector<int> topological_order() const;
};

/// Draws the DAG: the bare structure without weights, which the scheduling benchmarks use
/// directly and gen/rwnn.h turns into a network. The same options (seed included) give the
/// same DAG. Throws Error when the options are impossible (e.g. a module of fewer than
/// 2 * channels nodes).
RandomDag generate_random_dag(const RandomDagOptions& options);

/// The bare DAG as JSON: {"node_count", "nodes_per_module", "edges": [[from, to], ...],
/// "channel_edges", "module_inputs", "module_outputs"} (docs/commands/gen.md).
nlohmann::json random_dag_to_json(const RandomDag& dag);

/// "er", "ws", "ba" and "sdep", "wdep" as the CLI spells them; throw Error otherwise.
RandomGraphModel parse_random_graph_model(const std::string& name);
ChannelDependence parse_channel_dependence(const std::string& name);

}  // namespace cleave
