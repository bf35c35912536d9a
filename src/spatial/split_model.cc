// The spatial split recipe and its figures (bytes, transfers, sync points, overlap, memory, time).
#include "spatial/split_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "machine/shared_medium.h"
#include "spatial/region_rules.h"

namespace cleave {

namespace {

int64_t value_bytes(const Graph& g, ValueId v) {
  auto s = static_sizes(g, v);
  if (!s) return 0;
  int64_t n = 1;
  for (int64_t d : *s) n *= d;
  return n * static_cast<int64_t>(element_size(g.value(v).dtype));
}

// Per machine: weights read and the peak of live activations, nodes taken in id order.
void memory_per_machine(const Graph& g, const std::vector<int>& machine_of, int machines,
                        std::vector<int64_t>& weights, std::vector<int64_t>& peak) {
  weights.assign(machines, 0);
  peak.assign(machines, 0);
  std::vector<std::set<ValueId>> seen(machines);
  std::map<std::pair<int, ValueId>, std::pair<std::size_t, std::size_t>> life;
  const std::vector<NodeId> order = g.node_ids();
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Node& n = g.node(order[k]);
    const int m = machine_of.empty() ? 0 : machine_of[order[k]];
    auto touch = [&](ValueId v) {
      if (v == kNoValue) return;
      if (g.value(v).initializer) {
        if (seen[m].insert(v).second) weights[m] += value_bytes(g, v);
        return;
      }
      auto [it, fresh] = life.try_emplace({m, v}, std::make_pair(k, k));
      if (!fresh) it->second.second = k;
    };
    for (ValueId v : n.inputs) touch(v);
    for (ValueId v : n.outputs) touch(v);
  }
  for (int m = 0; m < machines; ++m) {
    std::vector<int64_t> delta(order.size() + 1, 0);
    for (const auto& [key, span] : life) {
      if (key.first != m) continue;
      const int64_t b = value_bytes(g, key.second);
      delta[span.first] += b;
      delta[span.second + 1] -= b;
    }
    int64_t live = 0;
    for (int64_t d : delta) peak[m] = std::max(peak[m], live += d);
  }
}

int64_t output_elements(const Graph& g, NodeId id) {
  const ValueId out = g.node(id).outputs[0];
  return value_bytes(g, out) / std::max<int64_t>(1, element_size(g.value(out).dtype));
}

double node_flops(const Graph& g, NodeId id, const Graph* model, NodeId origin) {
  const int64_t out = output_elements(g, id);
  if (model && origin >= 0) return flops_per_output_element(*model, origin) * out;
  return 0.25 * out;  // a copy (Slice, Concat, Identity)
}

// Seconds of node `id` of `g` (a piece of `origin` of `model`, or a copy when origin < 0) on a
// machine of speed 1: its share of the cost table's seconds for the origin when the table has
// them; a copy its bytes at the cost model's copy bandwidth when it has one; else its FLOPs at
// the cost model's rate.
double node_seconds(const Graph& g, NodeId id, const Graph& model, NodeId origin,
                    const SplitCostModel& cost, const CostTable* costs) {
  if (costs && origin >= 0 && static_cast<std::size_t>(origin) < costs->nodes.size() &&
      !costs->nodes[origin].seconds.empty()) {
    const double whole = static_cast<double>(std::max<int64_t>(1, output_elements(model, origin)));
    return costs->seconds(origin) * static_cast<double>(output_elements(g, id)) / whole;
  }
  if (origin < 0 && cost.copy_bytes_per_second > 0) {
    // A copy reads the bytes it writes: its output, twice, at the memory's rate.
    const ValueId out = g.node(id).outputs[0];
    return cost.seconds_per_copy +
           2.0 * static_cast<double>(value_bytes(g, out)) / cost.copy_bytes_per_second;
  }
  return node_flops(g, id, &model, origin) / cost.flops_per_second;
}

// Per value of `g`, the machines other than its producer's that read it: one message each.
std::vector<std::vector<int>> reading_machines(const PartitionedGraph& split) {
  const Graph& g = split.graph;
  std::vector<std::vector<int>> readers(g.value_capacity());
  for (NodeId id : g.node_ids()) {
    const int m = split.machine[id];
    for (ValueId v : g.node(id).inputs) {
      if (v == kNoValue) continue;
      std::vector<int>& list = readers[v];
      if (std::find(list.begin(), list.end(), m) == list.end()) list.push_back(m);
    }
  }
  return readers;
}

// List schedule of the partitioned graph in id order: a node starts when its machine is free
// and its inputs are there, as the simulator prices them: its machine sends each output once
// per other reading machine after it (SplitCostModel::send_seconds), a message leaves as the
// sender copies it or as the link carries it (on a shared link, the medium's queue in the
// order the nodes finish here), and the reader takes the messages in the order they come.
double list_schedule_seconds(const Graph& graph, const PartitionedGraph& split,
                             const SplitCostModel& cost, const CostTable* costs) {
  const Graph& g = split.graph;
  std::vector<double> ready(g.value_capacity(), 0), sent(g.value_capacity(), 0),
      machine_free(split.machines, 0);
  std::vector<int> where(g.value_capacity(), -1);
  // A value a machine has taken once is there for its later readers: (value, machine) -> when.
  std::map<std::pair<ValueId, int>, double> taken;
  // On a shared link, when a value's message to a machine is across the medium.
  std::map<std::pair<ValueId, int>, double> crossed;
  std::vector<std::tuple<double, double, ValueId>> messages;  // (there, bytes, value)
  const bool priced_ends = cost.machine && cost.machine->prices_message_ends();
  const bool shared = cost.machine && cost.machine->queues_on_one_link();
  SharedMedium medium(shared ? cost.machine->link_burst_bytes : 0.0);
  const std::vector<std::vector<int>> readers = reading_machines(split);
  const auto latency = [&](int from, int to) {
    return cost.latency.empty() ? cost.latency_seconds : cost.latency.at(from).at(to);
  };
  const auto bandwidth = [&](int from, int to) {
    return !cost.bandwidth.empty() && cost.bandwidth.at(from).at(to) > 0 ? cost.bandwidth[from][to]
                                                                         : cost.bytes_per_second;
  };
  for (NodeId id : g.node_ids()) {
    const int m = split.machine[id];
    double start = machine_free[m];
    messages.clear();
    for (ValueId v : g.node(id).inputs) {
      if (v == kNoValue || where[v] < 0) continue;
      const auto had = taken.find({v, m});
      if (where[v] == m || had != taken.end()) {
        start = std::max(start, where[v] == m ? ready[v] : had->second);
        continue;
      }
      const double bytes = static_cast<double>(value_bytes(g, v));
      double there = shared ? crossed.at({v, m}) + latency(where[v], m)
                            : ready[v] + cost.transfer_seconds(where[v], m, bytes);
      if (priced_ends) there = std::max(there, sent[v] + latency(where[v], m));
      messages.emplace_back(there, bytes, v);
    }
    std::sort(messages.begin(), messages.end());
    messages.erase(std::unique(messages.begin(), messages.end()), messages.end());
    for (const auto& [there, bytes, v] : messages) {
      start = priced_ends
                  ? cost.machine->message_taken(static_cast<std::size_t>(m), start, there, bytes)
                  : std::max(start, there);
    }
    for (const auto& message : messages) taken[{std::get<2>(message), m}] = start;
    const double finish =
        start + node_seconds(g, id, graph, split.origin[id], cost, costs) / cost.speed(m);
    double sends = finish;
    for (ValueId v : g.node(id).outputs) {
      if (v == kNoValue) continue;
      ready[v] = finish;
      where[v] = m;
      const double bytes = static_cast<double>(value_bytes(g, v));
      for (int reader : readers[v]) {
        if (reader == m) continue;
        sends += cost.send_seconds(m, bytes);
        if (shared) crossed[{v, reader}] = medium.cross(finish, bytes, bandwidth(m, reader));
      }
    }
    for (ValueId v : g.node(id).outputs)
      if (v != kNoValue) sent[v] = sends;
    machine_free[m] = sends;
  }
  return *std::max_element(machine_free.begin(), machine_free.end());
}
}  // namespace

SplitStats split_stats(const Graph& graph, const Partition& partition, const Regions& regions,
                       const PartitionedGraph& split, const SplitCostModel& cost,
                       const CostTable* costs) {
  SplitStats s;
  for (const SplitTransfer& t : split.transfers) {
    s.transfer_bytes += t.bytes;
    ++s.transfers;
  }
  s.sync_points = split.sync_points;
  std::copy(std::begin(split.join_cases), std::end(split.join_cases), s.join_cases);
  for (NodeId id : graph.node_ids()) {
    const ValueId out = graph.node(id).outputs[0];
    auto sizes = static_sizes(graph, out);
    if (!sizes || partition.layers[id]->gathered) continue;
    int64_t total = 0;
    for (int m = 0; m < partition.machines; ++m)
      if (regions.present[out][m]) total += box_elements(regions.held[out][m]);
    const int64_t extra = total - box_elements(full_box(*sizes));
    s.redundant_elements += extra;
    s.redundant_flops += static_cast<double>(extra) * flops_per_output_element(graph, id);
  }
  memory_per_machine(split.graph, split.machine, split.machines, s.weight_bytes,
                     s.peak_activation_bytes);
  s.predicted_seconds = list_schedule_seconds(graph, split, cost, costs);
  return s;
}

void price_pieces_as_their_ranks_run_them(const PartitionedGraph& split, CostTable& table) {
  const Graph& g = split.graph;
  // Weights of a few cache lines or more; a shape or scale input is no cache's worth.
  constexpr int64_t kWeightBytes = 1024;
  const auto reads_weights = [&](NodeId id) {
    return std::any_of(g.node(id).inputs.begin(), g.node(id).inputs.end(), [&](ValueId v) {
      return v != kNoValue && g.value(v).initializer &&
             g.value(v).initializer->element_count() * element_size(g.value(v).dtype) >=
                 kWeightBytes;
    });
  };
  // Node ids are in a topological order, the order the profile ran them: per model node, its
  // first piece that reads weights.
  std::map<NodeId, NodeId> first;
  for (NodeId id : g.node_ids()) {
    const NodeId origin = split.origin[id];
    if (origin < 0 || static_cast<std::size_t>(id) >= table.nodes.size() || !reads_weights(id))
      continue;
    const auto [lead, added] = first.emplace(origin, id);
    if (added) continue;
    const NodeCost& cold = table.nodes[lead->second];
    NodeCost& warm = table.nodes[id];
    const double scale =
        static_cast<double>(output_elements(g, id)) /
        static_cast<double>(std::max<int64_t>(1, output_elements(g, lead->second)));
    for (std::size_t t = 0; t < warm.seconds.size() && t < cold.seconds.size(); ++t)
      warm.seconds[t] = std::max(warm.seconds[t], cold.seconds[t] * scale);
    if (warm.busy_seconds && cold.busy_seconds)
      warm.busy_seconds = std::max(*warm.busy_seconds, *cold.busy_seconds * scale);
  }
}

CostTable split_cost_table(const Graph& graph, const PartitionedGraph& split,
                           const SplitCostModel& cost, const CostTable* costs) {
  const Graph& g = split.graph;
  CostTable table = static_costs(g);  // the sizes; the seconds are replaced below
  table.source = costs ? costs->source : "flops";
  if (costs) table.convolution_family = costs->convolution_family;
  for (NodeId id : g.node_ids()) {
    const NodeId origin = split.origin[id];
    std::vector<double>& seconds = table.nodes[id].seconds;
    seconds = {node_seconds(g, id, graph, origin, cost, costs)};
    if (!costs || origin < 0 || static_cast<std::size_t>(origin) >= costs->nodes.size()) continue;
    const std::vector<double>& whole = costs->nodes[origin].seconds;
    const double share = static_cast<double>(output_elements(g, id)) /
                         static_cast<double>(std::max<int64_t>(1, output_elements(graph, origin)));
    for (std::size_t t = 1; t < whole.size(); ++t) seconds.push_back(whole[t] * share);
  }
  return table;
}

ShapeMap shape_map_of(const Graph& graph, const Regions& regions, int machines) {
  ShapeMap map(machines);
  auto add = [&](ValueId v) {
    auto sizes = static_sizes(graph, v);
    if (!sizes || graph.value(v).initializer) return;
    map.add(graph.value(v).name, graph.value(v).dtype, *sizes);
    for (int m = 0; m < machines; ++m)
      if (regions.present[v][m]) map.set_box(graph.value(v).name, m, regions.held[v][m]);
  };
  for (ValueId v : graph.inputs()) add(v);
  for (NodeId id : graph.topological_order())
    for (ValueId v : graph.node(id).outputs) add(v);
  return map;
}

SplitResult split_model(const Graph& graph, const SplitModelOptions& options) {
  SplitResult r;
  auto log = [&](const std::string& line) {
    r.report.log.push_back(line);
    if (options.log) options.log(line);
  };
  const int machines = options.split.machines;

  // 1. Naive partition (§3.3): every layer's output divided, last layer back.
  r.partition = naive_partition(graph, options.split);
  int split_layers = 0;
  for (NodeId id : graph.node_ids()) {
    const LayerSplit& l = *r.partition.layers[id];
    if (!l.gathered) {
      ++split_layers;
    } else if (machines > 1) {
      r.report.gathers.push_back({graph.describe(id), graph.node(id).op_type, l.reason});
    }
  }
  log("naive partition: " + std::to_string(split_layers) + " of " +
      std::to_string(graph.node_count()) + " layers split across " + std::to_string(machines) +
      " machines along " + std::string(split_dim_name(options.split.dim)) + ", " +
      std::to_string(r.report.gathers.size()) + " computed whole on machine 0");

  // 2. The naive phase as the thesis builds it: every tensor gathered whole, then cropped.
  if (!options.figures_only) {
    Regions naive_regions = plan_regions(graph, r.partition, JoinMode::kNaive, false, options.cost);
    PartitionedGraph naive =
        build_partitioned_graph(graph, r.partition, naive_regions, JoinMode::kNaive);
    r.report.naive =
        split_stats(graph, r.partition, naive_regions, naive, options.cost, options.costs);
    log("naive joins: " + std::to_string(r.report.naive.transfers) + " transfers, " +
        std::to_string(r.report.naive.transfer_bytes) + " bytes");
  }

  // 3. Optimizer (§3.4): fetch only missing rows, crop only where needed, fuse tiles when the
  //    redundant work costs less than the transfers it saves.
  r.regions = plan_regions(graph, r.partition, JoinMode::kOptimized, options.fuse, options.cost);
  r.report.fused_tensors = r.regions.fused_count;
  r.shape_map = shape_map_of(graph, r.regions, machines);
  log("optimizer: " + std::to_string(r.regions.fused_count) +
      " tensors computed with their halo instead of fetched (fused tiles)");

  // 4. The partitioned graph: slices, crops, joins and transfer pieces as nodes.
  r.partitioned = build_partitioned_graph(graph, r.partition, r.regions, JoinMode::kOptimized);
  r.report.optimized =
      split_stats(graph, r.partition, r.regions, r.partitioned, options.cost, options.costs);
  const auto& c = r.report.optimized.join_cases;
  log("partitioned graph: " + std::to_string(r.partitioned.graph.node_count()) + " nodes, " +
      std::to_string(r.report.optimized.transfers) + " transfers of " +
      std::to_string(r.report.optimized.transfer_bytes) + " bytes; joins: " + std::to_string(c[0]) +
      " same, " + std::to_string(c[1]) + " crop, " + std::to_string(c[2]) + " fetch, " +
      std::to_string(c[3]) + " fetch+crop");

  // 5. Manifest: per machine its segments and transfers in one deadlock-free order.
  if (!options.figures_only) {
    r.manifest = make_manifest(r.partitioned);
    std::size_t runs = 0;
    for (const auto& steps : r.manifest.steps)
      for (const auto& s : steps) runs += s.kind == ManifestStep::Kind::kRun;
    log("manifest: " + std::to_string(runs) + " sub-models");
  }

  // The unsplit model for comparison.
  std::vector<int64_t> weights, peak;
  memory_per_machine(graph, {}, 1, weights, peak);
  r.report.whole_model_peak_bytes = weights[0] + peak[0];
  for (NodeId id : graph.node_ids())
    r.report.whole_model_seconds +=
        node_seconds(graph, id, graph, id, options.cost, options.costs) / options.cost.speed(0);
  return r;
}

nlohmann::json split_report_json(const SplitResult& result) {
  auto stats = [](const SplitStats& s) {
    nlohmann::json j;
    j["transfer_bytes"] = s.transfer_bytes;
    j["transfers"] = s.transfers;
    j["sync_points"] = s.sync_points;
    j["redundant_elements"] = s.redundant_elements;
    j["redundant_flops"] = s.redundant_flops;
    j["weight_bytes"] = s.weight_bytes;
    j["peak_activation_bytes"] = s.peak_activation_bytes;
    std::vector<int64_t> total;
    for (std::size_t m = 0; m < s.weight_bytes.size(); ++m)
      total.push_back(s.weight_bytes[m] + s.peak_activation_bytes[m]);
    j["peak_memory_bytes"] = total;
    j["join_cases"] = {{"same", s.join_cases[0]},
                       {"crop", s.join_cases[1]},
                       {"fetch", s.join_cases[2]},
                       {"fetch+crop", s.join_cases[3]}};
    j["predicted_seconds"] = s.predicted_seconds;
    return j;
  };
  const SplitReport& r = result.report;
  nlohmann::json j;
  j["machines"] = result.partition.machines;
  j["naive"] = stats(r.naive);
  j["optimized"] = stats(r.optimized);
  j["fused_tensors"] = r.fused_tensors;
  j["whole_model_peak_bytes"] = r.whole_model_peak_bytes;
  j["whole_model_seconds"] = r.whole_model_seconds;
  j["gathers"] = nlohmann::json::array();
  for (const GatherNote& g : r.gathers)
    j["gathers"].push_back({{"node", g.node}, {"op", g.op}, {"reason", g.reason}});
  j["log"] = r.log;
  return j;
}

}  // namespace cleave
