// Random modules (ER, WS, BA), their endpoints (sdep, wdep) and the channels that chain them.
#include "modelgen/random_dag.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>

#include "ir/graph.h"
#include "modelgen/random.h"
#include "support/topological_order.h"

namespace cleave {

namespace {

using UndirectedEdges = std::set<std::pair<int, int>>;  // (low, high)

void join(UndirectedEdges& edges, int a, int b) {
  edges.insert({std::min(a, b), std::max(a, b)});
}

UndirectedEdges erdos_renyi(int n, double p, DeterministicRandom& random) {
  UndirectedEdges edges;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (random.bernoulli(p)) join(edges, i, j);
    }
  }
  return edges;
}

// Watts-Strogatz as networkx draws it: for each lattice offset, walk the ring and rewire the
// edge (u, u + offset) to a random new partner of u with probability p.
UndirectedEdges watts_strogatz(int n, int k, double p, DeterministicRandom& random) {
  UndirectedEdges edges;
  if (k >= n) {
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) join(edges, i, j);
    }
    return edges;
  }
  for (int offset = 1; offset <= k / 2; ++offset) {
    for (int u = 0; u < n; ++u) join(edges, u, (u + offset) % n);
  }
  auto degree = [&](int u) {
    int d = 0;
    for (auto [a, b] : edges) d += (a == u) + (b == u);
    return d;
  };
  auto has = [&](int a, int b) { return edges.count({std::min(a, b), std::max(a, b)}) > 0; };
  for (int offset = 1; offset <= k / 2; ++offset) {
    for (int u = 0; u < n; ++u) {
      if (!random.bernoulli(p)) continue;
      const int v = (u + offset) % n;
      if (degree(u) >= n - 1) continue;
      int w = static_cast<int>(random.uniform_index(n));
      while (w == u || has(u, w)) w = static_cast<int>(random.uniform_index(n));
      if (!has(u, v)) continue;
      edges.erase({std::min(u, v), std::max(u, v)});
      join(edges, u, w);
    }
  }
  return edges;
}

// The classic Barabasi-Albert procedure: start from m unconnected nodes; each new node links to
// m distinct targets drawn with probability proportional to their degree.
UndirectedEdges barabasi_albert(int n, int m, DeterministicRandom& random) {
  UndirectedEdges edges;
  std::vector<int> targets;
  for (int i = 0; i < m; ++i) targets.push_back(i);
  std::vector<int> repeated;
  for (int source = m; source < n; ++source) {
    for (int t : targets) join(edges, source, t);
    repeated.insert(repeated.end(), targets.begin(), targets.end());
    repeated.insert(repeated.end(), m, source);
    std::set<int> chosen;
    targets.clear();
    while (static_cast<int>(chosen.size()) < m) {
      int pick = repeated[random.uniform_index(repeated.size())];
      if (chosen.insert(pick).second) targets.push_back(pick);
    }
  }
  return edges;
}

// One module's edges in local ids, plus its endpoints.
struct Module {
  std::set<std::pair<int, int>> edges;  // directed (from, to)
  std::vector<int> inputs;
  std::vector<int> outputs;
};

bool reaches(const std::set<std::pair<int, int>>& edges, int n, int from, int to) {
  std::vector<std::vector<int>> out(n);
  for (auto [a, b] : edges) out[a].push_back(b);
  std::vector<bool> seen(n, false);
  std::vector<int> stack = {from};
  seen[from] = true;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    if (u == to) return true;
    for (int v : out[u]) {
      if (!seen[v]) {
        seen[v] = true;
        stack.push_back(v);
      }
    }
  }
  return false;
}

bool contains(const std::vector<int>& list, int x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

// Feeds every source that is not an input from a random input it does not itself reach, and
// drains every sink that is not an output into a random output that does not reach it; the
// reachability test keeps the module acyclic when endpoints sit mid-module (wdep).
void tie_loose_ends(Module& module, int n, DeterministicRandom& random) {
  std::vector<int> in_degree(n, 0), out_degree(n, 0);
  for (auto [a, b] : module.edges) {
    ++out_degree[a];
    ++in_degree[b];
  }
  for (int v = 0; v < n; ++v) {
    if (contains(module.inputs, v) || in_degree[v] > 0) continue;
    std::vector<int> candidates;
    for (int u : module.inputs) {
      if (!reaches(module.edges, n, v, u)) candidates.push_back(u);
    }
    const int u = candidates[random.uniform_index(candidates.size())];
    module.edges.insert({u, v});
    ++out_degree[u];
    ++in_degree[v];
  }
  for (int v = 0; v < n; ++v) {
    if (contains(module.outputs, v) || out_degree[v] > 0) continue;
    std::vector<int> candidates;
    for (int w : module.outputs) {
      if (!reaches(module.edges, n, w, v)) candidates.push_back(w);
    }
    const int w = candidates[random.uniform_index(candidates.size())];
    module.edges.insert({v, w});
    ++out_degree[v];
    ++in_degree[w];
  }
}

Module draw_module(const RandomDagOptions& options, int input_count, int output_count,
                   DeterministicRandom& random) {
  const int n = options.nodes_per_module;
  UndirectedEdges undirected;
  switch (options.model) {
    case RandomGraphModel::kErdosRenyi:
      undirected = erdos_renyi(n, options.probability, random);
      break;
    case RandomGraphModel::kWattsStrogatz:
      undirected = watts_strogatz(n, options.ws_neighbors, options.probability, random);
      break;
    case RandomGraphModel::kBarabasiAlbert:
      undirected = barabasi_albert(n, options.ba_attachments, random);
      break;
  }
  Module module;
  // RandWire's orientation: from the lower to the higher node index, which makes a DAG.
  for (auto [a, b] : undirected) module.edges.insert({a, b});

  if (options.dependence == ChannelDependence::kStrong) {
    for (int i = 0; i < input_count; ++i) module.inputs.push_back(i);
    for (int i = n - output_count; i < n; ++i) module.outputs.push_back(i);
    // Inputs must be sources and outputs sinks: drop edges among the inputs (the only edges
    // that can enter an input) and among the outputs.
    std::erase_if(module.edges, [&](const std::pair<int, int>& e) {
      return contains(module.inputs, e.second) || contains(module.outputs, e.first);
    });
  } else {
    // Node 0 can never gain an in-edge, nor node n-1 an out-edge, so they are always safe
    // endpoints to hang loose sources and sinks on; the others are sampled anywhere.
    std::vector<int> middle;
    for (int i = 1; i < n - 1; ++i) middle.push_back(i);
    std::vector<int> drawn = random.sample_distinct(middle, input_count - 1 + output_count - 1);
    module.inputs = {0};
    module.outputs = {n - 1};
    for (int i = 0; i < static_cast<int>(drawn.size()); ++i) {
      (i < input_count - 1 ? module.inputs : module.outputs).push_back(drawn[i]);
    }
    std::sort(module.inputs.begin(), module.inputs.end());
    std::sort(module.outputs.begin(), module.outputs.end());
  }
  tie_loose_ends(module, n, random);
  return module;
}

void check_options(const RandomDagOptions& options) {
  const int n = options.nodes_per_module;
  if (options.modules < 1) throw Error("rwnn: --modules must be >= 1");
  if (n < 2) throw Error("rwnn: --nodes must be >= 2");
  if (options.min_channels < 1 || options.max_channels < options.min_channels) {
    throw Error(
        fmt::format("rwnn: channels between modules must be a range 1 <= lo <= hi, got "
                    "{}..{}",
                    options.min_channels, options.max_channels));
  }
  if (options.modules > 1 && 2 * options.max_channels > n) {
    throw Error(
        fmt::format("rwnn: {} channels need modules of at least {} nodes (inputs and "
                    "outputs are distinct nodes), got --nodes {}",
                    options.max_channels, 2 * options.max_channels, n));
  }
  if (!(options.probability >= 0 && options.probability <= 1)) {
    throw Error(fmt::format("rwnn: --p must be in [0, 1], got {}", options.probability));
  }
  if (options.model == RandomGraphModel::kWattsStrogatz && options.ws_neighbors < 2) {
    throw Error("rwnn: WS needs --k >= 2");
  }
  if (options.model == RandomGraphModel::kBarabasiAlbert &&
      (options.ba_attachments < 1 || options.ba_attachments >= n)) {
    throw Error(fmt::format("rwnn: BA needs 1 <= --ba-m < --nodes ({}), got {}", n,
                            options.ba_attachments));
  }
}

}  // namespace

RandomDag generate_random_dag(const RandomDagOptions& options) {
  check_options(options);
  DeterministicRandom random(options.seed);
  const int n = options.nodes_per_module;
  std::vector<int> boundary_channels;
  for (int t = 0; t + 1 < options.modules; ++t) {
    const auto span = static_cast<uint64_t>(options.max_channels - options.min_channels + 1);
    boundary_channels.push_back(options.min_channels +
                                static_cast<int>(random.uniform_index(span)));
  }

  RandomDag dag;
  dag.nodes_per_module = n;
  dag.node_count = n * options.modules;
  for (int t = 0; t < options.modules; ++t) {
    const int inputs = t == 0 ? 1 : boundary_channels[t - 1];
    const int outputs = t + 1 == options.modules ? 1 : boundary_channels[t];
    Module module = draw_module(options, inputs, outputs, random);
    const int base = t * n;
    for (auto [a, b] : module.edges) dag.edges.push_back({base + a, base + b});
    std::vector<int> global_inputs, global_outputs;
    for (int i : module.inputs) global_inputs.push_back(base + i);
    for (int o : module.outputs) global_outputs.push_back(base + o);
    dag.module_inputs.push_back(std::move(global_inputs));
    dag.module_outputs.push_back(std::move(global_outputs));
  }
  std::sort(dag.edges.begin(), dag.edges.end());
  for (int t = 0; t + 1 < options.modules; ++t) {
    for (std::size_t i = 0; i < dag.module_outputs[t].size(); ++i) {
      dag.channel_edges.push_back({dag.module_outputs[t][i], dag.module_inputs[t + 1][i]});
    }
  }
  dag.edges.insert(dag.edges.end(), dag.channel_edges.begin(), dag.channel_edges.end());
  return dag;
}

std::vector<std::vector<int>> RandomDag::predecessors() const {
  std::vector<std::vector<int>> result(node_count);
  for (auto [a, b] : edges) result[b].push_back(a);
  for (auto& list : result) std::sort(list.begin(), list.end());
  return result;
}

std::vector<std::vector<int>> RandomDag::successors() const {
  std::vector<std::vector<int>> result(node_count);
  for (auto [a, b] : edges) result[a].push_back(b);
  for (auto& list : result) std::sort(list.begin(), list.end());
  return result;
}

std::vector<int> RandomDag::topological_order() const {
  std::vector<int> order = cleave::topological_order(successors());
  if (static_cast<int>(order.size()) != node_count) throw Error("random DAG has a cycle");
  return order;
}

nlohmann::json random_dag_to_json(const RandomDag& dag) {
  return {{"node_count", dag.node_count},
          {"nodes_per_module", dag.nodes_per_module},
          {"edges", dag.edges},
          {"channel_edges", dag.channel_edges},
          {"module_inputs", dag.module_inputs},
          {"module_outputs", dag.module_outputs}};
}

RandomGraphModel parse_random_graph_model(const std::string& name) {
  if (name == "er") return RandomGraphModel::kErdosRenyi;
  if (name == "ws") return RandomGraphModel::kWattsStrogatz;
  if (name == "ba") return RandomGraphModel::kBarabasiAlbert;
  throw Error(fmt::format("unknown random graph model '{}' (expected er, ws or ba)", name));
}

ChannelDependence parse_channel_dependence(const std::string& name) {
  if (name == "sdep") return ChannelDependence::kStrong;
  if (name == "wdep") return ChannelDependence::kWeak;
  throw Error(fmt::format("unknown channel dependence '{}' (expected sdep or wdep)", name));
}

}  // namespace cleave
