// Stream placement: candidates balanced by steady-state cost and hand-offs, chosen by simulation.
#include "stream/placement.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>

#include "support/error.h"

namespace cleave {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Items one steady-state iteration moves over each channel, and what one costs to hand over.
struct Traffic {
  std::vector<double> items;
  std::vector<double> item_seconds;
};

Traffic traffic_of(const StreamGraph& graph, const StreamSchedule& schedule,
                   const PlacementCosts& costs) {
  Traffic t;
  t.items.assign(graph.channels.size(), 0.0);
  t.item_seconds.assign(graph.channels.size(), costs.handoff_seconds);
  for (std::size_t c = 0; c < graph.channels.size(); ++c) {
    const StreamChannel& ch = graph.channels[c];
    t.items[c] = ch.from < 0 ? static_cast<double>(schedule.input_per_iteration)
                             : static_cast<double>(schedule.repetitions[ch.from] *
                                                   graph.nodes[ch.from].push[ch.from_port]);
    if (c < costs.item_bytes.size()) {
      t.item_seconds[c] +=
          costs.handoff_seconds_per_byte * static_cast<double>(costs.item_bytes[c]);
    }
  }
  return t;
}

// The worker that owns a channel's producer side: the program input is fed by worker 0.
int producer_worker(const StreamChannel& ch, const std::vector<int>& worker) {
  return ch.from < 0 ? 0 : worker[ch.from];
}

// Worker loads kept up to date under single-node moves (the local search's inner loop).
class Loads {
 public:
  Loads(const StreamGraph& graph, const std::vector<double>& node_seconds, const Traffic& traffic,
        std::vector<int> worker, int workers)
      : graph_(graph),
        node_seconds_(node_seconds),
        traffic_(traffic),
        worker_(std::move(worker)),
        load_(workers, 0.0) {
    for (std::size_t v = 0; v < worker_.size(); ++v) load_[worker_[v]] += node_seconds_[v];
    for (std::size_t c = 0; c < graph_.channels.size(); ++c) {
      const StreamChannel& ch = graph_.channels[c];
      if (ch.to >= 0 && producer_worker(ch, worker_) != worker_[ch.to]) {
        load_[worker_[ch.to]] += handoff(static_cast<int>(c));
      }
    }
  }

  const std::vector<int>& worker() const { return worker_; }
  const std::vector<double>& load() const { return load_; }
  double max_load() const { return *std::max_element(load_.begin(), load_.end()); }
  double sum_of_squares() const {
    double s = 0;
    for (double l : load_) s += l * l;
    return s;
  }

  void move(int v, int to) {
    add(v, -1);
    worker_[v] = to;
    add(v, +1);
  }

 private:
  // Adds (sign +1) or removes (-1) node v's work and every hand-off it takes part in (a move
  // removes them, changes v's worker and adds them again).
  void add(int v, int sign) {
    const StreamNode& node = graph_.nodes[v];
    load_[worker_[v]] += sign * node_seconds_[v];
    for (int c : node.inputs) {
      const StreamChannel& ch = graph_.channels[c];
      if (producer_worker(ch, worker_) != worker_[v]) load_[worker_[v]] += sign * handoff(c);
    }
    for (int c : node.outputs) {
      const StreamChannel& ch = graph_.channels[c];
      if (ch.to >= 0 && worker_[ch.to] != worker_[v]) load_[worker_[ch.to]] += sign * handoff(c);
    }
  }
  double handoff(int c) const { return traffic_.items[c] * traffic_.item_seconds[c]; }

  const StreamGraph& graph_;
  const std::vector<double>& node_seconds_;
  const Traffic& traffic_;
  std::vector<int> worker_;
  std::vector<double> load_;
};

bool better(const Loads& a, double max_b, double squares_b) {
  constexpr double kEps = 1e-12;
  const double max_a = a.max_load();
  if (max_a < max_b * (1 - kEps)) return true;
  return max_a <= max_b * (1 + kEps) && a.sum_of_squares() < squares_b * (1 - kEps);
}

// Cuts the topological order into at most `workers` runs whose loads (work plus the hand-offs
// into each run) stay under a bound found by bisection: the lowest bound greedy filling meets.
std::vector<int> contiguous(const StreamGraph& graph, const std::vector<double>& node_seconds,
                            const Traffic& traffic, int workers) {
  const std::size_t n = graph.nodes.size();
  const auto fill = [&](double bound, std::vector<int>& worker) {
    int w = 0;
    double load = 0;
    std::size_t first = 0;  // first node of the current run
    for (std::size_t v = 0; v < n; ++v) {
      const auto cost_in_run = [&](std::size_t start) {
        double c = node_seconds[v];
        for (int ch : graph.nodes[v].inputs) {
          const int from = graph.channels[ch].from;
          if (from < 0 ? w > 0 : static_cast<std::size_t>(from) < start) {
            c += traffic.items[ch] * traffic.item_seconds[ch];
          }
        }
        return c;
      };
      double c = cost_in_run(first);
      if (v > first && load + c > bound && w + 1 < workers) {
        ++w;
        first = v;
        load = 0;
        c = cost_in_run(first);
      }
      load += c;
      worker[v] = w;
      if (load > bound) return false;
    }
    return true;
  };
  std::vector<int> worker(n, 0), best(n, 0);
  double lo = 0, hi = 0;
  for (double s : node_seconds) hi += s;
  for (std::size_t c = 0; c < graph.channels.size(); ++c) {
    hi += traffic.items[c] * traffic.item_seconds[c];
  }
  if (!fill(hi, best)) return best;
  for (int i = 0; i < 60 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (fill(mid, worker)) {
      hi = mid;
      best = worker;
    } else {
      lo = mid;
    }
  }
  return best;
}

// Moves a node off the most loaded worker, or swaps it with another worker's node, while that
// lowers the most loaded worker's load (ties: the sum of squared loads); hand-offs count.
std::vector<int> improve(const StreamGraph& graph, const std::vector<double>& node_seconds,
                         const Traffic& traffic, std::vector<int> start, int workers) {
  Loads loads(graph, node_seconds, traffic, std::move(start), workers);
  const int n = static_cast<int>(graph.nodes.size());
  // Swaps cost a pass over every pair: only for programs of a few hundred actors.
  const bool swaps = n <= 400;
  for (int round = 0; round < std::min(4 * n + 16, 2000); ++round) {
    const int heavy = static_cast<int>(std::max_element(loads.load().begin(), loads.load().end()) -
                                       loads.load().begin());
    const double max_now = loads.max_load();
    const double squares_now = loads.sum_of_squares();
    int best_v = -1, best_to = -1, best_u = -1;
    double best_max = max_now, best_squares = squares_now;
    const auto consider = [&](int v, int to, int u) {
      if (better(loads, best_max, best_squares)) {
        best_max = loads.max_load();
        best_squares = loads.sum_of_squares();
        best_v = v;
        best_to = to;
        best_u = u;
      }
    };
    for (int v = 0; v < n; ++v) {
      if (loads.worker()[v] != heavy) continue;
      for (int to = 0; to < workers; ++to) {
        if (to == heavy) continue;
        loads.move(v, to);
        consider(v, to, -1);
        // Swaps: v goes to `to`, u (on `to`) comes to the heavy worker.
        for (int u = 0; u < n && swaps; ++u) {
          if (loads.worker()[u] != to || u == v) continue;
          loads.move(u, heavy);
          consider(v, to, u);
          loads.move(u, to);
        }
        loads.move(v, heavy);
      }
    }
    if (best_v < 0) break;
    loads.move(best_v, best_to);
    if (best_u >= 0) loads.move(best_u, heavy);
  }
  return loads.worker();
}

void check_costs(const StreamGraph& graph, const PlacementCosts& costs, int workers) {
  if (costs.firing_seconds.size() != graph.nodes.size()) {
    throw Error(fmt::format("stream placement: {} firing costs for {} actors",
                            costs.firing_seconds.size(), graph.nodes.size()));
  }
  if (workers < 1) throw Error(fmt::format("stream placement: {} workers", workers));
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    if (!std::isfinite(costs.firing_seconds[v]) || costs.firing_seconds[v] < 0) {
      throw Error(fmt::format("stream placement: actor \"{}\" costs {} s per firing",
                              graph.nodes[v].name, costs.firing_seconds[v]));
    }
  }
  if (!std::isfinite(costs.handoff_seconds) || costs.handoff_seconds < 0 ||
      !std::isfinite(costs.handoff_seconds_per_byte) || costs.handoff_seconds_per_byte < 0) {
    throw Error("stream placement: hand-off costs must be finite and >= 0");
  }
}

std::vector<double> steady_seconds(const StreamSchedule& schedule, const PlacementCosts& costs) {
  std::vector<double> s(costs.firing_seconds.size());
  for (std::size_t v = 0; v < s.size(); ++v) {
    s[v] = static_cast<double>(schedule.repetitions[v]) * costs.firing_seconds[v];
  }
  return s;
}

}  // namespace

std::string_view placement_method_name(PlacementMethod method) {
  switch (method) {
    case PlacementMethod::kBalanced:
      return "balanced";
    case PlacementMethod::kGreedy:
      return "greedy";
    case PlacementMethod::kContiguous:
      return "contiguous";
  }
  return "?";
}

PlacementMethod parse_placement_method(std::string_view name) {
  for (PlacementMethod m :
       {PlacementMethod::kBalanced, PlacementMethod::kGreedy, PlacementMethod::kContiguous}) {
    if (placement_method_name(m) == name) return m;
  }
  throw Error(fmt::format("placement \"{}\": expected balanced, greedy or contiguous", name));
}

std::vector<int> place_longest_first(const std::vector<double>& node_seconds, int workers) {
  std::vector<int> order(node_seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return node_seconds[a] > node_seconds[b]; });
  std::vector<double> load(std::max(workers, 1), 0.0);
  std::vector<int> worker(node_seconds.size(), 0);
  for (int v : order) {
    const auto w = std::min_element(load.begin(), load.end()) - load.begin();
    worker[v] = static_cast<int>(w);
    load[w] += node_seconds[v];
  }
  return worker;
}

std::vector<double> worker_loads(const StreamGraph& graph, const StreamSchedule& schedule,
                                 const PlacementCosts& costs, const std::vector<int>& worker,
                                 int workers) {
  const Traffic traffic = traffic_of(graph, schedule, costs);
  const std::vector<double> node_seconds = steady_seconds(schedule, costs);
  return Loads(graph, node_seconds, traffic, worker, workers).load();
}

double simulate_stream(const StreamGraph& graph, const StreamSchedule& schedule,
                       const PlacementCosts& costs, const std::vector<int>& worker, int workers,
                       int64_t capacity_factor) {
  const std::size_t n = graph.nodes.size();
  const Traffic traffic = traffic_of(graph, schedule, costs);
  // Enough iterations to reach a periodic steady state, few enough to stay cheap: each
  // firing scans up to a worker's actors, so large programs get fewer (at least 4).
  int64_t per_iteration = 0;
  for (int64_t r : schedule.repetitions) per_iteration += r;
  const int64_t scan = std::max<int64_t>(1, static_cast<int64_t>(n) / workers);
  const int64_t iterations =
      std::clamp<int64_t>(20000000 / std::max<int64_t>(1, per_iteration * scan), 4, 64);
  const int64_t per_out = schedule.output_per_iteration;
  if (per_out <= 0) return 0;

  std::vector<int64_t> count(graph.channels.size(), 0), reserved(graph.channels.size(), 0);
  std::vector<int64_t> capacity(graph.channels.size());
  for (std::size_t c = 0; c < capacity.size(); ++c) {
    capacity[c] = std::max<int64_t>(1, capacity_factor * schedule.buffers[c]);
  }
  count[graph.input_channel] = std::numeric_limits<int64_t>::max() / 4;  // an endless input
  capacity[graph.output_channel] = std::numeric_limits<int64_t>::max() / 4;
  // Seconds each firing of v spends taking items over from another worker.
  std::vector<double> duration(n);
  for (std::size_t v = 0; v < n; ++v) {
    duration[v] = costs.firing_seconds[v];
    for (std::size_t p = 0; p < graph.nodes[v].inputs.size(); ++p) {
      const int c = graph.nodes[v].inputs[p];
      if (producer_worker(graph.channels[c], worker) != worker[v]) {
        duration[v] += static_cast<double>(graph.nodes[v].pop[p]) * traffic.item_seconds[c];
      }
    }
  }
  std::vector<std::vector<int>> mine(workers);
  for (std::size_t v = 0; v < n; ++v) mine[worker[v]].push_back(static_cast<int>(v));
  std::vector<std::size_t> cursor(workers, 0);
  std::vector<int> running(workers, -1);
  using Event = std::pair<double, int>;  // (finish time, worker)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  const auto ready = [&](int v) {
    const StreamNode& node = graph.nodes[v];
    for (std::size_t p = 0; p < node.inputs.size(); ++p) {
      if (count[node.inputs[p]] < node.peek[p]) return false;
    }
    for (std::size_t p = 0; p < node.outputs.size(); ++p) {
      const int c = node.outputs[p];
      if (count[c] + reserved[c] + node.push[p] > capacity[c]) return false;
    }
    return true;
  };
  const auto start = [&](int w, double now) {
    for (std::size_t k = 0; k < mine[w].size(); ++k) {
      const std::size_t i = (cursor[w] + k) % mine[w].size();
      const int v = mine[w][i];
      if (!ready(v)) continue;
      const StreamNode& node = graph.nodes[v];
      for (std::size_t p = 0; p < node.inputs.size(); ++p) count[node.inputs[p]] -= node.pop[p];
      for (std::size_t p = 0; p < node.outputs.size(); ++p) {
        reserved[node.outputs[p]] += node.push[p];
      }
      running[w] = v;
      cursor[w] = i + 1;
      events.emplace(now + duration[v], w);
      return;
    }
  };
  // When the output holds k × per_out items: the time iteration k finished.
  const int64_t first_k = iterations / 2;
  double first_time = -1, now = 0;
  while (true) {
    for (int w = 0; w < workers; ++w) {
      if (running[w] < 0) start(w, now);
    }
    if (events.empty()) return 0;  // nothing can fire: the rates starve the program
    const auto [time, w] = events.top();
    events.pop();
    now = time;
    const int v = running[w];
    running[w] = -1;
    const StreamNode& node = graph.nodes[v];
    for (std::size_t p = 0; p < node.outputs.size(); ++p) {
      reserved[node.outputs[p]] -= node.push[p];
      count[node.outputs[p]] += node.push[p];
    }
    const int64_t out = count[graph.output_channel];
    if (first_time < 0 && out >= first_k * per_out) first_time = now;
    if (out >= iterations * per_out) {
      if (now <= first_time) return kInfinity;
      return static_cast<double>((iterations - first_k) * schedule.input_per_iteration) /
             (now - first_time);
    }
  }
}

StreamPlacement evaluate_placement(const StreamGraph& graph, const StreamSchedule& schedule,
                                   const PlacementCosts& costs, const std::vector<int>& worker,
                                   int workers, int64_t capacity_factor) {
  check_costs(graph, costs, workers);
  if (worker.size() != graph.nodes.size()) {
    throw Error(fmt::format("stream placement: {} entries for {} actors", worker.size(),
                            graph.nodes.size()));
  }
  for (std::size_t v = 0; v < worker.size(); ++v) {
    if (worker[v] < 0 || worker[v] >= workers) {
      throw Error(fmt::format("stream placement: actor \"{}\" on worker {} of {}",
                              graph.nodes[v].name, worker[v], workers));
    }
  }
  StreamPlacement p;
  p.worker = worker;
  p.node_seconds = steady_seconds(schedule, costs);
  p.worker_seconds = worker_loads(graph, schedule, costs, worker, workers);
  const double work = std::accumulate(p.node_seconds.begin(), p.node_seconds.end(), 0.0);
  p.handoff_seconds = std::accumulate(p.worker_seconds.begin(), p.worker_seconds.end(), 0.0) - work;
  const double bottleneck = *std::max_element(p.worker_seconds.begin(), p.worker_seconds.end());
  p.bound_items_per_second =
      bottleneck > 0 ? static_cast<double>(schedule.input_per_iteration) / bottleneck : kInfinity;
  p.predicted_items_per_second =
      simulate_stream(graph, schedule, costs, worker, workers, capacity_factor);
  return p;
}

StreamPlacement place_stream_nodes(const StreamGraph& graph, const StreamSchedule& schedule,
                                   const PlacementCosts& costs, int workers, PlacementMethod method,
                                   int64_t capacity_factor) {
  check_costs(graph, costs, workers);
  const std::vector<double> node_seconds = steady_seconds(schedule, costs);
  const Traffic traffic = traffic_of(graph, schedule, costs);
  std::vector<std::vector<int>> candidates;
  switch (method) {
    case PlacementMethod::kGreedy:
      candidates.push_back(place_longest_first(node_seconds, workers));
      break;
    case PlacementMethod::kContiguous:
      candidates.push_back(contiguous(graph, node_seconds, traffic, workers));
      break;
    case PlacementMethod::kBalanced: {
      // Everything on one worker is a candidate too: with costly hand-offs it can win.
      const std::vector<int> together(graph.nodes.size(), 0);
      for (const std::vector<int>& start : {contiguous(graph, node_seconds, traffic, workers),
                                            place_longest_first(node_seconds, workers), together}) {
        candidates.push_back(improve(graph, node_seconds, traffic, start, workers));
      }
      break;
    }
  }
  StreamPlacement best;
  for (const std::vector<int>& worker : candidates) {
    StreamPlacement p =
        evaluate_placement(graph, schedule, costs, worker, workers, capacity_factor);
    constexpr double kEps = 1e-9;
    if (best.worker.empty() ||
        p.predicted_items_per_second > best.predicted_items_per_second * (1 + kEps) ||
        (p.predicted_items_per_second >= best.predicted_items_per_second * (1 - kEps) &&
         p.handoff_seconds < best.handoff_seconds)) {
      best = std::move(p);
    }
  }
  best.method = method;
  return best;
}

}  // namespace cleave
