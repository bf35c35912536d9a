// Chains of layers under the seconds objective: layer spaces, candidates, the DP over layers.
#include "spatial/search_chain.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "cost/cost_table.h"
#include "spatial/region_rules.h"
#include "spatial/split_model.h"

namespace cleave {

namespace {

// Indices of the layer's direction one machine reads across a boundary: its kernel's reach
// past its stride (Eq. 3.2's k_eff - stride), along H or W; none along C.
int64_t layer_halo(const Graph& graph, const Node& n, int axis) {
  if (axis < 2 || axis > 3 || n.inputs.size() < 2) return 0;
  std::vector<int64_t> kernel = n.ints_attribute("kernel_shape");
  if (kernel.size() != 2) {
    auto w = static_sizes(graph, n.inputs[1]);
    if (!w || w->size() != 4) return 0;
    kernel = {(*w)[2], (*w)[3]};
  }
  std::vector<int64_t> dilations = n.ints_attribute("dilations");
  std::vector<int64_t> strides = n.ints_attribute("strides");
  const int d = axis - 2;
  const int64_t dilation = dilations.size() == 2 ? dilations[d] : 1;
  const int64_t stride = strides.size() == 2 ? strides[d] : 1;
  return std::max<int64_t>(0, (kernel[d] - 1) * dilation + 1 - stride);
}

// The one input of `n` that is not a constant, or kNoValue when there are several or none.
ValueId data_input(const Graph& graph, const Node& n) {
  ValueId found = kNoValue;
  for (ValueId v : n.inputs) {
    if (v == kNoValue || graph.value(v).initializer) continue;
    if (found != kNoValue) return kNoValue;
    found = v;
  }
  return found;
}

int64_t elements_besides(const std::vector<int64_t>& sizes, int axis) {
  int64_t n = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (static_cast<int>(d) != axis) n *= sizes[d];
  return n;
}

// Rows [a, b) of `want` minus the rows `held` has: up to two pieces.
std::vector<Interval> minus(const Interval& want, const Interval& held) {
  if (want.empty()) return {};
  if (held.empty() || held.end <= want.begin || held.begin >= want.end) return {want};
  std::vector<Interval> rest;
  if (want.begin < held.begin) rest.push_back({want.begin, held.begin});
  if (held.end < want.end) rest.push_back({held.end, want.end});
  return rest;
}

// `p`'s boundaries moved to a tensor of `length` indices (each part at least one index).
std::vector<Interval> rescaled(const std::vector<Interval>& p, int64_t length) {
  const int64_t from = p.back().end;
  const int64_t n = static_cast<int64_t>(p.size());
  if (length < n) return {};
  std::vector<Interval> out;
  int64_t at = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t end = k + 1 == n ? length
                             : static_cast<int64_t>(std::llround(static_cast<double>(p[k].end) *
                                                                 static_cast<double>(length) /
                                                                 static_cast<double>(from)));
    end = std::clamp<int64_t>(end, at + 1, length - (n - 1 - k));
    out.push_back({at, end});
    at = end;
  }
  return out;
}

// What a layer reads of the tensor before it: its own window, then back through the followers
// of the layer before (last first), each region rule mapping the rows it needs to its input's.
std::function<Interval(const Interval&)> reads_through(const Graph& graph, NodeId node,
                                                       std::vector<NodeId> path, int axis) {
  // The DP asks for the same intervals again and again: each is mapped once.
  auto known = std::make_shared<std::map<std::pair<int64_t, int64_t>, Interval>>();
  auto map_rows = [&graph, node, path = std::move(path), axis](const Interval& rows) {
    auto sizes = static_sizes(graph, graph.node(node).outputs[0]);
    Box box = full_box(*sizes);
    box[axis] = rows;
    std::vector<NodeId> walk{node};
    walk.insert(walk.end(), path.rbegin(), path.rend());
    ValueId last = kNoValue;
    for (NodeId id : walk) {
      const Node& n = graph.node(id);
      last = data_input(graph, n);
      RegionMap r = map_region(graph, id, box);
      std::size_t slot = 0;
      while (slot < n.inputs.size() && n.inputs[slot] != last) ++slot;
      if (!r.ok || slot >= r.inputs.size() || !r.inputs[slot]) {
        auto whole = static_sizes(graph, last);
        return Interval{0, whole ? (*whole)[axis] : rows.end};
      }
      box = *r.inputs[slot];
    }
    return box[axis];
  };
  return [known, map_rows](const Interval& rows) {
    auto [it, fresh] = known->try_emplace({rows.begin, rows.end});
    if (fresh) it->second = map_rows(rows);
    return it->second;
  };
}

}  // namespace

std::optional<LayerSearch> layer_search(const Graph& graph, const SplitModelOptions& options,
                                        const Partition& base, NodeId id,
                                        const std::map<std::string, LayerConfig>& layers,
                                        double threshold_percent, const CostTable* costs) {
  const Node& n = graph.node(id);
  const LayerSplit& split = *base.layers[id];
  if (split.gathered || split.axes.size() != 1 || n.name.empty() || layers.count(n.name) ||
      n.op_type != "Conv" || split_granularity(graph, id, split.axes[0]) != 1)
    return std::nullopt;
  const int machines = options.split.machines;
  auto sizes = static_sizes(graph, n.outputs[0]);
  LayerSearch s;
  s.node = id;
  s.axis = split.axes[0];
  s.space.length = (*sizes)[s.axis];
  s.space.speeds = options.cost.speeds;
  if (s.space.speeds.empty()) s.space.speeds.assign(machines, 1.0);
  s.space.threshold_percent = threshold_percent;
  s.space.other_elements = elements_besides(*sizes, s.axis);
  if (s.space.length < machines * 2) return std::nullopt;
  const int64_t halo = layer_halo(graph, n, s.axis);
  const double elem = static_cast<double>(element_size(graph.value(n.outputs[0]).dtype));
  const double per_element = flops_per_output_element(graph, id);
  s.weights.operations = per_element / options.cost.flops_per_second;
  s.weights.harmonic = s.weights.operations;
  s.weights.data = elem / options.cost.bytes_per_second;
  s.weights.overlap = s.weights.operations;
  s.weights.halo = halo;
  // The layer's seconds on a machine of speed 1: the cost table's, else FLOPs at the rate.
  const double flops = per_element * static_cast<double>(s.space.length * s.space.other_elements);
  const double layer_seconds = costs && static_cast<std::size_t>(id) < costs->nodes.size() &&
                                       !costs->nodes[id].seconds.empty()
                                   ? costs->seconds(id)
                                   : flops / options.cost.flops_per_second;
  for (double speed : s.space.speeds)
    s.seconds.seconds_per_index.push_back(layer_seconds / static_cast<double>(s.space.length) /
                                          speed);
  s.seconds.bytes_per_index = elem * static_cast<double>(s.space.other_elements);
  s.seconds.halo = halo;
  s.seconds.links = options.cost;
  return s;
}

double chain_layer_seconds(const ChainLayer& layer, const SplitCostModel& links,
                           const std::vector<Interval>* previous,
                           const std::vector<Interval>& current) {
  const std::vector<Interval>& before = previous ? *previous : layer.input_partition;
  const bool receives = layer.reads && !before.empty();
  const int machines = static_cast<int>(current.size());
  std::vector<double> own(current.size(), 0.0);
  std::vector<HaloMessage> messages;
  for (std::size_t m = 0; m < current.size(); ++m) {
    own[m] = static_cast<double>(current[m].size()) * layer.seconds_per_index[m];
    if (!receives || current[m].empty()) continue;
    const Interval need = layer.reads(current[m]);
    for (const Interval& piece : minus(need, before[m])) {
      for (std::size_t j = 0; j < before.size(); ++j) {
        if (j == m) continue;
        const int64_t rows = intersect(piece, before[j]).size();
        if (rows <= 0) continue;
        const double bytes = static_cast<double>(rows) * layer.bytes_per_previous_index;
        // A machine recomputes the rows where that is quicker than receiving them alone.
        if (!layer.recompute_seconds_per_previous_index.empty()) {
          const double again =
              static_cast<double>(rows) * layer.recompute_seconds_per_previous_index[m];
          if (again < links.receive_seconds(static_cast<int>(j), static_cast<int>(m), bytes)) {
            own[m] += again;
            continue;
          }
        }
        messages.push_back({static_cast<int>(j), static_cast<int>(m), bytes});
      }
    }
  }
  double slowest = 0;
  const std::vector<double> exchange = messages.empty()
                                           ? std::vector<double>(current.size(), 0.0)
                                           : links.exchange_seconds(std::move(messages), machines);
  for (std::size_t m = 0; m < current.size(); ++m)
    slowest = std::max(slowest, own[m] + exchange[m]);
  return slowest;
}

double chain_seconds(const std::vector<ChainLayer>& chain, const SplitCostModel& links,
                     const std::vector<std::vector<Interval>>& choice) {
  double total = 0;
  for (std::size_t k = 0; k < chain.size(); ++k)
    total += chain_layer_seconds(chain[k], links, k ? &choice[k - 1] : nullptr, choice[k]);
  return total;
}

ChainResult search_chain_seconds(const std::vector<ChainLayer>& chain,
                                 const SplitCostModel& links) {
  ChainResult result;
  if (chain.empty()) return result;
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // best[k][c]: least seconds of layers 0..k with layer k taking candidate c; from[k][c]: the
  // predecessor's candidate on that path.
  std::vector<std::vector<double>> best(chain.size());
  std::vector<std::vector<std::size_t>> from(chain.size());
  for (std::size_t k = 0; k < chain.size(); ++k) {
    const auto& here = chain[k].candidates;
    best[k].assign(here.size(), kNone);
    from[k].assign(here.size(), 0);
    for (std::size_t c = 0; c < here.size(); ++c) {
      if (k == 0) {
        ++result.evaluated;
        best[k][c] = chain_layer_seconds(chain[k], links, nullptr, here[c]);
        continue;
      }
      for (std::size_t p = 0; p < chain[k - 1].candidates.size(); ++p) {
        if (best[k - 1][p] == kNone) continue;
        ++result.evaluated;
        const double v = best[k - 1][p] +
                         chain_layer_seconds(chain[k], links, &chain[k - 1].candidates[p], here[c]);
        if (v < best[k][c]) {
          best[k][c] = v;
          from[k][c] = p;
        }
      }
    }
  }
  const auto& last = best.back();
  if (last.empty()) return result;
  std::size_t c =
      static_cast<std::size_t>(std::min_element(last.begin(), last.end()) - last.begin());
  if (last[c] == kNone) return result;
  result.value = last[c];
  result.best.resize(chain.size());
  for (std::size_t k = chain.size(); k-- > 0;) {
    result.best[k] = chain[k].candidates[c];
    c = from[k][c];
  }
  return result;
}

std::vector<std::vector<Interval>> enumerate_partitions(const SearchSpace& space,
                                                        std::size_t limit) {
  if (log10_partition_count(space) > std::log10(static_cast<double>(limit)) + 1e-9) return {};
  const auto sizes = possible_sizes(space);
  const int n = static_cast<int>(sizes.size());
  std::vector<std::vector<Interval>> all;
  std::vector<Interval> current(n);
  std::function<void(int, int64_t, int64_t)> walk = [&](int k, int64_t lo, int64_t hi) {
    for (int64_t s = lo; s <= hi; ++s)
      for (int64_t size : sizes[k]) {
        current[k] = {s, s + size};
        if (current[k].end > space.length) break;
        if (k == n - 1) {
          if (current[k].end == space.length) all.push_back(current);
        } else {
          walk(k + 1, space.overlap ? s + 1 : current[k].end,
               std::min(current[k].end, space.length - 1));
        }
      }
  };
  walk(0, 0, 0);
  return all;
}

std::vector<NodeId> share_followers(const Graph& graph, const Partition& partition, NodeId conv) {
  std::vector<NodeId> out;
  const std::vector<int>& axes = partition.layers[conv]->axes;
  ValueId v = graph.node(conv).outputs[0];
  while (true) {
    if (graph.value(v).is_graph_output) break;
    const auto readers = graph.consumers(v);
    if (readers.size() != 1) break;
    const NodeId next = readers[0];
    const Node& n = graph.node(next);
    const auto& split = partition.layers[next];
    if (n.op_type == "Conv" || n.outputs.size() != 1 || data_input(graph, n) != v || !split ||
        split->gathered || split->axes != axes)
      break;
    out.push_back(next);
    v = n.outputs[0];
  }
  return out;
}

namespace {

// The searched layers in topological order, each with its followers and its chain
// predecessor (-1: it starts a chain).
struct SearchedLayers {
  std::vector<LayerSearch> searches;
  std::vector<std::vector<NodeId>> followers;
  std::vector<int> previous;
};

SearchedLayers searched_layers(const Graph& graph, const SplitModelOptions& options,
                               const Partition& base,
                               const std::map<std::string, LayerConfig>& layers,
                               double threshold_percent, const CostTable* costs) {
  SearchedLayers found;
  std::map<ValueId, std::size_t> tail_of;  // value -> the searched layer it ends
  std::vector<bool> continued;
  for (NodeId id : graph.topological_order()) {
    auto s = layer_search(graph, options, base, id, layers, threshold_percent, costs);
    if (!s) continue;
    const std::size_t k = found.searches.size();
    std::vector<NodeId> after = share_followers(graph, base, id);
    const ValueId input = data_input(graph, graph.node(id));
    int link = -1;
    auto it = tail_of.find(input);
    if (it != tail_of.end() && !continued[it->second] &&
        found.searches[it->second].axis == s->axis) {
      link = static_cast<int>(it->second);
      continued[it->second] = true;
    }
    found.previous.push_back(link);
    continued.push_back(false);
    tail_of[after.empty() ? graph.node(id).outputs[0] : graph.node(after.back()).outputs[0]] = k;
    found.searches.push_back(std::move(*s));
    found.followers.push_back(std::move(after));
  }
  return found;
}

// Chains: runs of linked layers, first to last.
std::vector<std::vector<std::size_t>> layer_chains(const std::vector<int>& previous) {
  std::vector<std::vector<std::size_t>> chains;
  std::vector<int> chain_of(previous.size(), -1);
  for (std::size_t k = 0; k < previous.size(); ++k) {
    if (previous[k] < 0) {
      chain_of[k] = static_cast<int>(chains.size());
      chains.push_back({k});
    } else {
      chain_of[k] = chain_of[previous[k]];
      chains[chain_of[k]].push_back(k);
    }
  }
  return chains;
}

// Layer i of a chain's model: its compute, what it reads of the layer before, its candidates;
// `enumerated` says whether those are every partition.
ChainLayer chain_layer(const Graph& graph, const SplitModelOptions& options, const Partition& base,
                       const SearchedLayers& found, const std::vector<std::size_t>& members,
                       std::size_t i, bool& enumerated) {
  const LayerSearch& s = found.searches[members[i]];
  const Node& n = graph.node(s.node);
  ChainLayer layer;
  layer.seconds_per_index = s.seconds.seconds_per_index;
  const ValueId input = data_input(graph, n);
  if (i > 0) {
    const std::size_t before = members[i - 1];
    const NodeId conv = found.searches[before].node;
    auto sizes = static_sizes(graph, graph.node(conv).outputs[0]);
    layer.reads = reads_through(graph, s.node, found.followers[before], s.axis);
    if (options.fuse)
      layer.recompute_seconds_per_previous_index = found.searches[before].seconds.seconds_per_index;
    layer.bytes_per_previous_index =
        static_cast<double>(element_size(graph.value(graph.node(conv).outputs[0]).dtype) *
                            elements_besides(*sizes, s.axis));
  } else if (input != kNoValue && graph.value(input).producer >= 0) {
    // The chain's input comes from a layer split by default: its partition is fixed.
    const LayerSplit& p = *base.layers[graph.value(input).producer];
    auto sizes = static_sizes(graph, input);
    if (sizes && sizes->size() == 4) {
      for (int m = 0; m < options.split.machines; ++m)
        layer.input_partition.push_back(p.owned[m].empty() ? Interval{} : p.owned[m][s.axis]);
      layer.reads = reads_through(graph, s.node, {}, s.axis);
      layer.bytes_per_previous_index = static_cast<double>(element_size(graph.value(input).dtype) *
                                                           elements_besides(*sizes, s.axis));
    }
  }
  layer.candidates = enumerate_partitions(s.space, kEnumeratedPartitions);
  enumerated = !layer.candidates.empty();
  if (layer.candidates.empty()) {
    layer.candidates.push_back(split_extent(s.space.length, s.space.speeds));
    for (const SearchResult& r :
         {search_partition_seconds(s.space, s.seconds), search_partition(s.space, s.weights, true)})
      if (!r.best.empty()) layer.candidates.push_back(r.best);
  }
  return layer;
}

// Candidates carried along the chain, rescaled to each length, both ways: a layer may then
// keep its neighbour's shares, so nothing is re-distributed between them.
void carry_candidates(std::vector<ChainLayer>& chain, const std::vector<bool>& enumerated,
                      const SearchedLayers& found, const std::vector<std::size_t>& members) {
  auto add = [&](std::size_t to, const std::vector<std::vector<Interval>>& from) {
    if (enumerated[to]) return;
    std::set<std::vector<int64_t>> seen;
    for (const auto& c : chain[to].candidates) {
      std::vector<int64_t> ends;
      for (const Interval& i : c) ends.push_back(i.end);
      seen.insert(ends);
    }
    const int64_t length = found.searches[members[to]].space.length;
    for (const auto& c : from) {
      if (chain[to].candidates.size() >= kEnumeratedPartitions) break;
      auto r = rescaled(c, length);
      if (r.empty()) continue;
      std::vector<int64_t> ends;
      for (const Interval& i : r) ends.push_back(i.end);
      if (seen.insert(ends).second) chain[to].candidates.push_back(r);
    }
  };
  for (std::size_t i = 1; i < chain.size(); ++i) add(i, chain[i - 1].candidates);
  for (std::size_t i = chain.size() - 1; i-- > 0;) add(i, chain[i + 1].candidates);
}

}  // namespace

std::map<std::string, LayerConfig> chained_seconds_configs(
    const Graph& graph, const SplitModelOptions& options,
    const std::map<std::string, LayerConfig>& layers, double threshold_percent,
    const CostTable* costs) {
  std::map<std::string, LayerConfig> out = layers;
  const Partition base = naive_partition(graph, options.split);
  const SearchedLayers found =
      searched_layers(graph, options, base, layers, threshold_percent, costs);
  for (const auto& members : layer_chains(found.previous)) {
    std::vector<ChainLayer> chain;
    std::vector<bool> enumerated;
    for (std::size_t i = 0; i < members.size(); ++i) {
      bool all = false;
      chain.push_back(chain_layer(graph, options, base, found, members, i, all));
      enumerated.push_back(all);
    }
    carry_candidates(chain, enumerated, found, members);
    // The DP; each layer and its followers take its partition's sizes as shares.
    ChainResult r = search_chain_seconds(chain, options.cost);
    for (std::size_t i = 0; i < r.best.size(); ++i) {
      LayerConfig config;
      for (const Interval& part : r.best[i])
        config.shares.push_back(static_cast<double>(part.size()));
      const std::size_t k = members[i];
      out[graph.node(found.searches[k].node).name] = config;
      for (NodeId f : found.followers[k]) {
        const std::string& name = graph.node(f).name;
        if (!name.empty() && !layers.count(name)) out[name] = config;
      }
    }
  }
  return out;
}

}  // namespace cleave
