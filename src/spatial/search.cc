// Partition search: procedural intervals, the Eq. 3.12 objective, branch and bound over the tree.
#include "spatial/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "spatial/region_rules.h"
#include "spatial/split_model.h"

namespace cleave {

std::vector<std::vector<int64_t>> possible_sizes(const SearchSpace& space) {
  const double total = std::accumulate(space.speeds.begin(), space.speeds.end(), 0.0);
  std::vector<std::vector<int64_t>> sizes;
  for (double speed : space.speeds) {
    const double interval = std::floor(static_cast<double>(space.length) / total * speed);
    const int64_t start = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(interval * (100 - space.threshold_percent) / 100)));
    const int64_t end = std::min<int64_t>(
        space.length,
        static_cast<int64_t>(std::ceil(interval * (100 + space.threshold_percent) / 100)));
    std::vector<int64_t> list;
    for (int64_t s = start; s <= end; ++s) list.push_back(s);
    sizes.push_back(list);
  }
  return sizes;
}

namespace {

// The running terms of the objective for a prefix of the machines.
struct Terms {
  double max_ops = 0;
  double data = 0;
  double overlap = 0;
  double inverse_sum = 0;  // for the harmonic mean
};

Terms extend(const SearchSpace& space, const SearchWeights& w, Terms t, int machine,
             const Interval& interval, const Interval* previous) {
  const double value = static_cast<double>(interval.size() * space.other_elements);  // Eq. 3.7
  const double work = value / space.speeds[machine];
  t.max_ops = std::max(t.max_ops, work);
  t.inverse_sum += 1.0 / std::max(work, 1e-12);
  if (previous) {
    const int64_t shared = std::max<int64_t>(0, previous->end - interval.begin);
    t.overlap += static_cast<double>(shared * space.other_elements);  // Eq. 3.10
    // Eq. 3.9: each side reads the halo it does not compute itself.
    const int64_t missing = std::max<int64_t>(0, w.halo - shared);
    t.data += 2.0 * static_cast<double>(missing * space.other_elements);
  }
  return t;
}

double bound(const SearchWeights& w, const Terms& t) {
  return w.operations * t.max_ops + w.data * t.data + w.overlap * t.overlap;
}

double finish(const SearchWeights& w, const Terms& t, int machines) {
  const double harmonic = static_cast<double>(machines) / t.inverse_sum;  // Eq. 3.11
  return bound(w, t) + w.harmonic * std::abs(t.max_ops - harmonic);
}

struct Walker {
  const SearchSpace& space;
  const SearchWeights& weights;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<int64_t> min_rest, max_rest;  // summed sizes of machines k..n-1
  bool prune;
  SearchResult result;
  std::vector<Interval> current;

  void walk(int machine, int64_t lo_start, int64_t hi_start, const Terms& terms) {
    const int n = static_cast<int>(sizes.size());
    for (int64_t start = lo_start; start <= hi_start; ++start) {
      for (int64_t size : sizes[machine]) {
        const Interval interval{start, start + size};
        if (interval.end > space.length) break;
        const int64_t left = space.length - interval.end;
        if (machine == n - 1 ? left != 0 : left > max_rest[machine + 1]) continue;
        if (machine < n - 1 && !space.overlap && left < min_rest[machine + 1]) continue;
        Terms t = extend(space, weights, terms, machine, interval,
                         machine ? &current[machine - 1] : nullptr);
        if (prune && bound(weights, t) >= result.value) continue;
        current[machine] = interval;
        if (machine == n - 1) {
          ++result.evaluated;
          const double v = finish(weights, t, n);
          if (v < result.value) {
            result.value = v;
            result.best = current;
          }
        } else {
          walk(machine + 1, space.overlap ? start + 1 : interval.end, interval.end, t);
        }
      }
    }
  }
};

// Partitions in the space, counted per (machine, start) from the right (no enumeration).
double log10_count(const SearchSpace& space, const std::vector<std::vector<int64_t>>& sizes) {
  const int n = static_cast<int>(sizes.size());
  const int64_t L = space.length;
  // ways[s] for machine k: number of ways machines k..n-1 finish, machine k starting at s,
  // kept as log10 to survive 10^30.
  const double none = -std::numeric_limits<double>::infinity();
  auto add = [&](double a, double b) {
    if (a == none) return b;
    if (b == none) return a;
    const double hi = std::max(a, b), lo = std::min(a, b);
    return hi + std::log10(1 + std::pow(10, lo - hi));
  };
  std::vector<double> next(L + 1, none);
  for (int k = n - 1; k >= 0; --k) {
    std::vector<double> ways(L + 1, none);
    for (int64_t s = 0; s < L; ++s) {
      for (int64_t size : sizes[k]) {
        const int64_t end = s + size;
        if (end > L) break;
        if (k == n - 1) {
          if (end == L) ways[s] = add(ways[s], 0);
          continue;
        }
        const int64_t lo = space.overlap ? s + 1 : end;
        for (int64_t t = lo; t <= end && t < L; ++t) ways[s] = add(ways[s], next[t]);
      }
    }
    next = std::move(ways);
  }
  return next[0];
}

}  // namespace

double partition_objective(const SearchSpace& space, const SearchWeights& weights,
                           const std::vector<Interval>& partition) {
  Terms t;
  for (std::size_t m = 0; m < partition.size(); ++m)
    t = extend(space, weights, t, static_cast<int>(m), partition[m],
               m ? &partition[m - 1] : nullptr);
  return finish(weights, t, static_cast<int>(partition.size()));
}

SearchResult search_partition(const SearchSpace& space, const SearchWeights& weights, bool prune) {
  const auto start = std::chrono::steady_clock::now();
  if (space.speeds.empty() || space.length < 1) throw Error("search: empty search space");
  Walker w{space, weights, possible_sizes(space), {}, {}, prune, {}, {}};
  const int n = static_cast<int>(w.sizes.size());
  w.min_rest.assign(n + 1, 0);
  w.max_rest.assign(n + 1, 0);
  for (int k = n - 1; k >= 0; --k) {
    w.min_rest[k] = w.min_rest[k + 1] + (w.sizes[k].empty() ? 0 : w.sizes[k].front());
    w.max_rest[k] = w.max_rest[k + 1] + (w.sizes[k].empty() ? 0 : w.sizes[k].back());
  }
  w.result.value = std::numeric_limits<double>::infinity();
  if (prune) {
    // The speed-share split (Eq. 3.1), when it lies in the space, is the first bound to beat.
    std::vector<Interval> shares = split_extent(space.length, space.speeds);
    bool inside = true;
    for (int k = 0; k < n; ++k)
      inside = inside && std::binary_search(w.sizes[k].begin(), w.sizes[k].end(), shares[k].size());
    if (inside) {
      ++w.result.evaluated;
      w.result.value = partition_objective(space, weights, shares);
      w.result.best = shares;
    }
  }
  w.current.assign(n, Interval{});
  w.walk(0, 0, 0, Terms{});
  w.result.seconds =  // the search alone; counting the space below is for the report
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  w.result.log10_total = log10_count(space, w.sizes);
  return w.result;
}

std::map<std::string, LayerConfig> searched_layer_configs(
    const Graph& graph, const SplitModelOptions& options,
    const std::map<std::string, LayerConfig>& layers, double threshold_percent) {
  std::map<std::string, LayerConfig> out = layers;
  const int machines = options.split.machines;
  std::vector<double> speeds = options.cost.speeds;
  if (speeds.empty()) speeds.assign(machines, 1.0);
  Partition base = naive_partition(graph, options.split);
  for (NodeId id : graph.node_ids()) {
    const Node& n = graph.node(id);
    const LayerSplit& split = *base.layers[id];
    if (split.gathered || split.axes.size() != 1 || n.name.empty() || layers.count(n.name) ||
        n.op_type != "Conv")
      continue;
    auto sizes = static_sizes(graph, n.outputs[0]);
    const int axis = split.axes[0];
    SearchSpace space;
    space.length = (*sizes)[axis];
    space.speeds = speeds;
    space.threshold_percent = threshold_percent;
    space.other_elements = 1;
    for (std::size_t d = 0; d < sizes->size(); ++d)
      if (static_cast<int>(d) != axis) space.other_elements *= (*sizes)[d];
    SearchWeights weights;
    weights.operations = flops_per_output_element(graph, id) / options.cost.flops_per_second;
    weights.harmonic = weights.operations;
    weights.data = static_cast<double>(element_size(graph.value(n.outputs[0]).dtype)) /
                   options.cost.bytes_per_second;
    weights.overlap = weights.operations;
    if (space.length < machines * 2) continue;
    SearchResult r = search_partition(space, weights, true);
    if (r.best.empty()) continue;
    LayerConfig config;
    for (const Interval& i : r.best) config.shares.push_back(static_cast<double>(i.size()));
    out[n.name] = config;
  }
  return out;
}

}  // namespace cleave
