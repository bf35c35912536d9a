// Partition search: procedural intervals, the Eq. 3.12 objective, branch and bound over the tree.
#include "spatial/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "cost/cost_table.h"
#include "spatial/region_rules.h"
#include "spatial/search_chain.h"
#include "spatial/search_seconds.h"
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

// The thesis's Algorithms 3-5 share the subtree below (machine, start index) between every
// prefix that reaches it. Here that sharing is exact: per machine k and start s, a dynamic
// programme right to left gives the least boundary cost (Eqs. 3.9-3.10) and the least maximum
// work (Eq. 3.8) of any completion from there, computed once. Their sum with the prefix's terms
// is a lower bound on every partition below, so a subtree whose bound cannot beat the best is
// skipped, and since children are visited in order of their bound, the first one that cannot
// beat it ends the loop (Algorithm 5's break, made lossless by the ordering).
struct SuffixBounds {
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  int64_t length = 0;
  std::vector<std::vector<double>> cost;  // [k][s]: least weighted boundary cost, k..n-1
  std::vector<std::vector<double>> work;  // [k][s]: least max work of machines k..n-1
  // [k][s * widths[k] + size - smallest[k]]: after() for machine k on [s, s + size), kept so
  // the walk looks each subtree's bound up instead of recomputing it.
  std::vector<std::vector<std::pair<double, double>>> next;
  std::vector<int64_t> smallest, widths;

  std::pair<double, double> lookup(int k, int64_t s, int64_t e) const {
    return next[k][s * widths[k] + (e - s) - smallest[k]];
  }

  double boundary(const SearchSpace& space, const SearchWeights& w, int64_t prev_end,
                  int64_t start) const {
    const int64_t shared = std::max<int64_t>(0, prev_end - start);
    const int64_t missing = std::max<int64_t>(0, w.halo - shared);
    return w.overlap * static_cast<double>(shared * space.other_elements) +
           w.data * 2.0 * static_cast<double>(missing * space.other_elements);
  }

  // Next starts after the interval [s, e) of a machine that is not the last.
  static std::pair<int64_t, int64_t> next_starts(const SearchSpace& space, int64_t s, int64_t e) {
    return {space.overlap ? s + 1 : e, std::min(e, space.length - 1)};
  }

  // Least (cost, work) of completions after machine k took [s, e); kNone when none exist.
  std::pair<double, double> after(const SearchSpace& space, const SearchWeights& w, int k,
                                  int64_t s, int64_t e) const {
    double best_cost = kNone, best_work = kNone;
    auto [lo, hi] = next_starts(space, s, e);
    for (int64_t t = lo; t <= hi; ++t) {
      if (cost[k + 1][t] == kNone) continue;
      best_cost = std::min(best_cost, boundary(space, w, e, t) + cost[k + 1][t]);
      best_work = std::min(best_work, work[k + 1][t]);
    }
    return {best_cost, best_work};
  }

  SuffixBounds(const SearchSpace& space, const SearchWeights& w,
               const std::vector<std::vector<int64_t>>& sizes)
      : length(space.length) {
    const int n = static_cast<int>(sizes.size());
    cost.assign(n, std::vector<double>(length + 1, kNone));
    work.assign(n, std::vector<double>(length + 1, kNone));
    next.resize(n);
    for (int k = 0; k < n; ++k) {
      smallest.push_back(sizes[k].empty() ? 0 : sizes[k].front());
      widths.push_back(sizes[k].empty() ? 0 : sizes[k].back() - sizes[k].front() + 1);
      if (k < n - 1) next[k].assign((length + 1) * widths[k], {kNone, kNone});
    }
    for (int k = n - 1; k >= 0; --k) {
      for (int64_t s = 0; s < (k == 0 ? 1 : length); ++s) {  // machine 0 starts at 0 only
        for (int64_t size : sizes[k]) {
          const int64_t e = s + size;
          if (e > length) break;
          const double own = static_cast<double>(size * space.other_elements) / space.speeds[k];
          if (k == n - 1) {
            if (e != length) continue;
            cost[k][s] = 0;
            work[k][s] = std::min(work[k][s], own);
            continue;
          }
          auto [c, m] = after(space, w, k, s, e);
          next[k][s * widths[k] + size - smallest[k]] = {c, m};
          if (c == kNone) continue;
          cost[k][s] = std::min(cost[k][s], c);
          work[k][s] = std::min(work[k][s], std::max(own, m));
        }
      }
    }
  }
};

// A lower bound on Eq. 3.12 for every completion of a prefix: `max_work` bounds the final
// maximum from below, `rest_cost` the boundary terms still to come, and the `rest` machines
// left are taken as perfectly balanced at the maximum, which bounds the harmonic mean from
// above (Eq. 3.11: |M - H| = M - H, as the harmonic mean never exceeds the maximum). The bound
// grows with the maximum, so a lower maximum gives a lower bound; with no machine left it is
// the objective itself.
double lower_bound(const SearchWeights& w, const Terms& t, double max_work, double rest_cost,
                   int machines, int rest) {
  const double inverse = t.inverse_sum + static_cast<double>(rest) / max_work;
  return (w.operations + w.harmonic) * max_work -
         w.harmonic * static_cast<double>(machines) / inverse + w.data * t.data +
         w.overlap * t.overlap + rest_cost;
}

struct Walker {
  const SearchSpace& space;
  const SearchWeights& weights;
  std::vector<std::vector<int64_t>> sizes;
  const SuffixBounds& suffix;
  bool prune;
  SearchResult result;
  std::vector<Interval> current;
  // Algorithm 3's "bad partitions", kept losslessly: per (machine, interval) whose subtree was
  // walked, the prefix terms it was walked with. Every completion's objective grows with the
  // prefix's max work, its boundary terms and its inverse-work sum (Eq. 3.11's harmonic mean
  // falls as that sum grows), and the best only improves, so a later prefix no better in all
  // three cannot find anything better below the same interval: its subtree is skipped. Above
  // all, this removes the prefixes that are reorderings of one another.
  struct Seen {
    double max_ops, separable, inverse_sum;
  };
  std::unordered_map<int64_t, std::vector<Seen>> walked;
  static constexpr std::size_t kSeenPerInterval = 32;

  int64_t key(int machine, const Interval& i) const {
    return (static_cast<int64_t>(machine) * (space.length + 1) + i.begin) * (space.length + 1) +
           i.end;
  }
  Seen seen_of(const Terms& t) const {
    return {t.max_ops, weights.data * t.data + weights.overlap * t.overlap, t.inverse_sum};
  }
  // Relative slack for sums added in another order (reorderings give equal terms up to it).
  static bool no_better(double a, double b) { return a >= b - 1e-12 * std::abs(b); }
  bool dominated(int machine, const Interval& i, const Terms& t) const {
    auto it = walked.find(key(machine, i));
    if (it == walked.end()) return false;
    const Seen now = seen_of(t);
    for (const Seen& old : it->second)
      if (no_better(now.max_ops, old.max_ops) && no_better(now.separable, old.separable) &&
          no_better(now.inverse_sum, old.inverse_sum))
        return true;
    return false;
  }
  void remember(int machine, const Interval& i, const Terms& t) {
    std::vector<Seen>& list = walked[key(machine, i)];
    if (list.size() < kSeenPerInterval) list.push_back(seen_of(t));
  }

  struct Child {
    Interval interval;
    Terms terms;
    double bound;
  };

  void walk(int machine, int64_t lo_start, int64_t hi_start, const Terms& terms) {
    const int n = static_cast<int>(sizes.size());
    const bool last = machine == n - 1;
    std::vector<Child> children;
    for (int64_t start = lo_start; start <= hi_start; ++start) {
      for (int64_t size : sizes[machine]) {
        const Interval interval{start, start + size};
        if (interval.end > space.length) break;
        if (last && interval.end != space.length) continue;
        Terms t = extend(space, weights, terms, machine, interval,
                         machine ? &current[machine - 1] : nullptr);
        double max_work = t.max_ops, rest_cost = 0;
        if (!last) {
          auto [c, m] = suffix.lookup(machine, interval.begin, interval.end);
          if (c == SuffixBounds::kNone) continue;  // no completion reaches the end exactly
          max_work = std::max(max_work, m);
          rest_cost = c;
        }
        const double lower = lower_bound(weights, t, max_work, rest_cost, n, n - 1 - machine);
        children.push_back({interval, t, lower});
      }
    }
    if (prune)
      std::stable_sort(children.begin(), children.end(),
                       [](const Child& a, const Child& b) { return a.bound < b.bound; });
    for (const Child& child : children) {
      if (prune && child.bound >= result.value) break;  // sorted: no later child can do better
      current[machine] = child.interval;
      if (last) {
        ++result.evaluated;
        const double v = finish(weights, child.terms, n);
        if (v < result.value) {
          result.value = v;
          result.best = current;
        }
      } else {
        if (prune && dominated(machine, child.interval, child.terms)) continue;
        auto [lo, hi] = SuffixBounds::next_starts(space, child.interval.begin, child.interval.end);
        walk(machine + 1, lo, hi, child.terms);
        if (prune) remember(machine, child.interval, child.terms);
      }
    }
  }
};

}  // namespace

// Partitions in the space, counted per (machine, start) from the right (no enumeration).
double log10_partition_count(const SearchSpace& space) {
  const std::vector<std::vector<int64_t>> sizes = possible_sizes(space);
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
  std::vector<std::vector<int64_t>> sizes = possible_sizes(space);
  const SuffixBounds suffix(space, weights, sizes);
  Walker w{space, weights, sizes, suffix, prune, {}, {}, {}};
  const int n = static_cast<int>(w.sizes.size());
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
  w.result.log10_total = log10_partition_count(space);
  return w.result;
}

std::map<std::string, LayerConfig> searched_layer_configs(
    const Graph& graph, const SplitModelOptions& options,
    const std::map<std::string, LayerConfig>& layers, double threshold_percent,
    SearchObjective objective, const CostTable* costs) {
  if (objective == SearchObjective::kSeconds)
    return chained_seconds_configs(graph, options, layers, threshold_percent, costs);
  std::map<std::string, LayerConfig> out = layers;
  const Partition base = naive_partition(graph, options.split);
  for (NodeId id : graph.node_ids()) {
    auto s = layer_search(graph, options, base, id, layers, threshold_percent, costs);
    if (!s) continue;
    const SearchResult r = search_partition(s->space, s->weights, true);
    if (r.best.empty()) continue;
    LayerConfig config;
    for (const Interval& i : r.best) config.shares.push_back(static_cast<double>(i.size()));
    out[graph.node(id).name] = config;
    // The layer's activations and pools take its shares, so nothing moves between them.
    for (NodeId f : share_followers(graph, base, id)) {
      const std::string& name = graph.node(f).name;
      if (!name.empty() && !layers.count(name)) out[name] = config;
    }
  }
  return out;
}

}  // namespace cleave
