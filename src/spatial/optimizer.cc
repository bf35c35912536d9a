// Held regions per machine and the cost-model decision to fuse layers per tile.
#include "spatial/optimizer.h"

#include <algorithm>
#include <tuple>

#include "spatial/region_rules.h"

namespace cleave {

double SplitCostModel::transfer_seconds(int from, int to, double bytes) const {
  double bw = bytes_per_second, lat = latency_seconds;
  if (!bandwidth.empty() && bandwidth.at(from).at(to) > 0) bw = bandwidth[from][to];
  if (!latency.empty()) lat = latency.at(from).at(to);
  return lat + bytes / bw;
}

double SplitCostModel::receive_seconds(int from, int to, double bytes) const {
  const double there = transfer_seconds(from, to, bytes);
  if (!machine || !machine->prices_message_ends()) return there;
  return machine->message_taken(static_cast<std::size_t>(to), 0, there, bytes);
}

double SplitCostModel::send_seconds(int from, double bytes) const {
  if (!machine || !machine->prices_message_ends()) return 0;
  return machine->sender_seconds(static_cast<std::size_t>(from), bytes);
}

std::vector<double> SplitCostModel::exchange_seconds(std::vector<HaloMessage> messages,
                                                     int machines) const {
  const bool priced_ends = machine && machine->prices_message_ends();
  const bool shared = machine && machine->queues_on_one_link();
  if (!priced_ends && !shared) {  // the search's inner loop: no order to keep
    std::vector<double> seconds(static_cast<std::size_t>(machines), 0.0);
    for (const HaloMessage& m : messages) seconds[m.to] += transfer_seconds(m.from, m.to, m.bytes);
    return seconds;
  }
  std::vector<double> sent(static_cast<std::size_t>(machines), 0.0);
  for (const HaloMessage& m : messages) sent[m.from] += send_seconds(m.from, m.bytes);
  std::sort(messages.begin(), messages.end(), [](const HaloMessage& a, const HaloMessage& b) {
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
  SharedMedium medium(shared ? machine->link_burst_bytes : 0.0);
  std::vector<double> link_free(static_cast<std::size_t>(machines), 0.0);
  // Per receiver: (there, bytes) of each message to it.
  std::vector<std::vector<std::pair<double, double>>> to(static_cast<std::size_t>(machines));
  for (const HaloMessage& m : messages) {
    double there = 0;
    if (shared) {
      double bw = bytes_per_second;
      if (!bandwidth.empty() && bandwidth.at(m.from).at(m.to) > 0) bw = bandwidth[m.from][m.to];
      const double lat = latency.empty() ? latency_seconds : latency.at(m.from).at(m.to);
      there = medium.cross(0.0, m.bytes, bw) + lat;
    } else {
      // Messages to one machine queue on its link (as the search always took them).
      there = link_free[m.to] + transfer_seconds(m.from, m.to, m.bytes);
      link_free[m.to] = there;
    }
    if (priced_ends) {
      const double lat = latency.empty() ? latency_seconds : latency.at(m.from).at(m.to);
      there = std::max(there, sent[m.from] + lat);
    }
    to[m.to].emplace_back(there, m.bytes);
  }
  std::vector<double> seconds(static_cast<std::size_t>(machines), 0.0);
  for (int k = 0; k < machines; ++k) {
    std::sort(to[k].begin(), to[k].end());
    double start = sent[k];
    for (const auto& [there, bytes] : to[k]) {
      start = priced_ends ? machine->message_taken(static_cast<std::size_t>(k), start, there, bytes)
                          : std::max(start, there);
    }
    seconds[k] = start;
  }
  return seconds;
}

JoinCase classify_join(const Box& held, const Box& read) {
  if (held == read) return JoinCase::kSame;
  if (box_contains(held, read)) return JoinCase::kCrop;
  if (box_contains(read, held)) return JoinCase::kFetch;
  return JoinCase::kFetchCrop;
}

std::string_view join_case_name(JoinCase c) {
  switch (c) {
    case JoinCase::kSame:
      return "same";
    case JoinCase::kCrop:
      return "crop";
    case JoinCase::kFetch:
      return "fetch";
    case JoinCase::kFetchCrop:
      return "fetch+crop";
  }
  return "?";
}

std::vector<Box> needed_boxes(const Graph& graph, const Partition& partition,
                              const Regions& regions, ValueId value, JoinMode mode) {
  const int machines = partition.machines;
  std::vector<Box> need(machines);
  auto sizes = static_sizes(graph, value);
  const Box whole = sizes ? full_box(*sizes) : Box{};
  for (NodeId c : graph.consumers(value)) {
    const Node& n = graph.node(c);
    for (int m = 0; m < machines; ++m) {
      if (!regions.present[n.outputs[0]][m]) continue;  // no slice of c on m
      const Box& out = regions.held[n.outputs[0]][m];
      // A gathered reader (one whose shapes may be unknown) reads its inputs whole.
      const RegionMap r =
          partition.layers[c]->gathered ? whole_region(graph, c) : map_region(graph, c, out);
      if (!r.ok) throw Error("split: node " + graph.describe(c) + ": " + r.reason);
      for (std::size_t slot = 0; slot < n.inputs.size(); ++slot) {
        if (n.inputs[slot] != value || !r.inputs[slot] || r.constant_inputs.count(slot)) continue;
        need[m] = mode == JoinMode::kNaive ? whole
                  : need[m].empty()        ? *r.inputs[slot]
                                           : bounding_box(need[m], *r.inputs[slot]);
      }
    }
  }
  if (graph.value(value).is_graph_output) need[0] = whole;
  return need;
}

Regions plan_regions(const Graph& graph, const Partition& partition, JoinMode mode, bool fuse,
                     const SplitCostModel& cost) {
  const int machines = partition.machines;
  Regions r;
  r.held.assign(graph.value_capacity(), std::vector<Box>(machines));
  r.present.assign(graph.value_capacity(), std::vector<char>(machines, 0));
  r.fused.assign(graph.value_capacity(), false);
  for (ValueId in : graph.inputs()) {
    auto sizes = static_sizes(graph, in);
    for (int m = 0; m < machines; ++m) {
      r.held[in][m] = sizes ? full_box(*sizes) : Box{};
      r.present[in][m] = 1;
    }
  }
  // Owned parts first, so that a consumer's read region is known before its producer's.
  for (NodeId id : graph.node_ids()) {
    const Node& n = graph.node(id);
    const LayerSplit& split = *partition.layers.at(id);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      for (int m = 0; m < machines; ++m) {
        if (k == 0) {
          r.held[n.outputs[k]][m] = split.owned[m];
          r.present[n.outputs[k]][m] = split.gathered ? m == 0 : !box_empty(split.owned[m]);
        } else {
          auto sizes = static_sizes(graph, n.outputs[k]);
          r.held[n.outputs[k]][m] = m == 0 && sizes ? full_box(*sizes) : Box{};
          r.present[n.outputs[k]][m] = m == 0;
        }
      }
    }
  }
  r.owned = r.held;
  if (!fuse || mode == JoinMode::kNaive || machines == 1) return r;
  std::vector<NodeId> order = graph.topological_order();
  std::vector<int> position(graph.node_capacity(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = static_cast<int>(k);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId id = *it;
    const Node& n = graph.node(id);
    const LayerSplit& split = *partition.layers.at(id);
    if (split.gathered || n.outputs.size() != 1) continue;
    const ValueId v = n.outputs[0];
    if (graph.value(v).is_graph_output) continue;  // gathered on machine 0 in any case
    std::vector<Box> need = needed_boxes(graph, partition, r, v, mode);
    const double elem = static_cast<double>(element_size(graph.value(v).dtype));
    const double flops = flops_per_output_element(graph, id);
    std::vector<Box> grown = r.owned[v];
    double transfer_time = 0, extra_time = 0;
    bool valid = true;
    std::vector<HaloMessage> exchange;  // what the machines would fetch of it
    for (int m = 0; m < machines && valid; ++m) {
      if (need[m].empty() || box_empty(need[m])) {
        // A machine that reads none of it would compute its part only for the others, who
        // then hold it already: fusing here wastes that machine's work.
        if (!box_empty(r.owned[v][m])) valid = false;
        continue;
      }
      if (box_empty(r.owned[v][m])) {
        valid = false;  // a machine with no part of this layer would compute it all
        break;
      }
      for (int j = 0; j < machines; ++j) {
        if (j == m) continue;
        const Box part = intersect(need[m], r.owned[v][j]);
        if (box_empty(part)) continue;
        exchange.push_back({j, m, static_cast<double>(box_elements(part)) * elem});
      }
      grown[m] = bounding_box(r.owned[v][m], need[m]);
      if (!map_region(graph, id, grown[m]).ok) valid = false;
      const double extra =
          static_cast<double>(box_elements(grown[m]) - box_elements(r.owned[v][m]));
      extra_time = std::max(extra_time, extra * flops / (cost.flops_per_second * cost.speed(m)));
    }
    if (valid && !exchange.empty()) {
      const std::vector<double> each = cost.exchange_seconds(exchange, machines);
      transfer_time = *std::max_element(each.begin(), each.end());
    }
    const bool wanted = cost.fixed_fuse_depth > 0 ? position[id] < cost.fixed_fuse_depth
                                                  : extra_time < transfer_time;
    if (valid && transfer_time > 0 && wanted) {
      r.held[v] = grown;
      r.fused[v] = true;
      ++r.fused_count;
    }
  }
  return r;
}

}  // namespace cleave
