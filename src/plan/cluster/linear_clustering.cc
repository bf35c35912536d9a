// Linear clustering (Ramiel Alg. 1), cluster merging (Alg. 2–3) and mapping onto workers.
#include "plan/cluster/linear_clustering.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "plan/list_schedule.h"
#include "plan/simulator.h"

namespace cleave {

namespace {

struct Span {
  double entry = 0;  // Largest distance_to_end in the cluster.
  double exit = 0;   // Smallest.
};

Span span_of(const std::vector<int>& cluster, const std::vector<double>& distance) {
  Span span{-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int task : cluster) {
    span.entry = std::max(span.entry, distance[task]);
    span.exit = std::min(span.exit, distance[task]);
  }
  return span;
}

double load_of(const TaskGraph& graph, const std::vector<int>& cluster) {
  double load = 0;
  for (int task : cluster) load += mean_task_time(graph.tasks[task]);
  return load;
}

}  // namespace

std::vector<double> distance_to_end(const TaskGraph& graph) {
  return upward_rank(graph);
}

Clusters linear_clusters(const TaskGraph& graph, const std::vector<double>& distance) {
  std::size_t n = graph.tasks.size();
  std::vector<std::set<int>> out_edges(n), in_edges(n);
  for (const auto& [from, to] : graph.edges) {
    out_edges[from].insert(to);
    in_edges[to].insert(from);
  }
  std::vector<bool> clustered(n, false);
  std::size_t remaining = n;
  auto farthest = [&](const auto& candidates) {
    int best = -1;
    for (int task : candidates) {
      if (best < 0 || distance[task] > distance[best] ||
          (distance[task] == distance[best] && task < best)) {
        best = task;
      }
    }
    return best;
  };
  auto drop_edge = [&](int from, int to) {
    out_edges[from].erase(to);
    in_edges[to].erase(from);
  };
  Clusters clusters;
  while (remaining > 0) {
    std::vector<int> ready;
    for (std::size_t task = 0; task < n; ++task) {
      if (!clustered[task] && in_edges[task].empty()) ready.push_back(static_cast<int>(task));
    }
    int current = farthest(ready);
    std::vector<int> cluster{current};
    clustered[current] = true;
    --remaining;
    while (!out_edges[current].empty()) {
      int next = farthest(out_edges[current]);
      for (int other : std::vector<int>(out_edges[current].begin(), out_edges[current].end())) {
        if (other != next) drop_edge(current, other);
      }
      for (int source : std::vector<int>(in_edges[next].begin(), in_edges[next].end()))
        drop_edge(source, next);
      cluster.push_back(next);
      clustered[next] = true;
      --remaining;
      current = next;
    }
    clusters.push_back(std::move(cluster));
  }
  return clusters;
}

bool merge_clusters_once(Clusters& clusters, const std::vector<double>& distance) {
  Clusters merged;
  std::vector<bool> skip(clusters.size(), false);
  bool any = false;
  for (std::size_t a = 0; a < clusters.size(); ++a) {
    if (skip[a]) continue;
    bool done = false;
    for (std::size_t b = 0; b < clusters.size() && !done; ++b) {
      if (a == b || skip[b]) continue;
      Span first = span_of(clusters[a], distance), second = span_of(clusters[b], distance);
      if (first.entry < second.exit || second.entry < first.exit) {
        std::vector<int> both = clusters[a];
        both.insert(both.end(), clusters[b].begin(), clusters[b].end());
        merged.push_back(std::move(both));
        skip[a] = skip[b] = true;
        any = done = true;
      }
    }
    if (!done) {
      merged.push_back(clusters[a]);
      skip[a] = true;
    }
  }
  clusters = std::move(merged);
  return any;
}

Clusters merge_clusters(Clusters clusters, const std::vector<double>& distance) {
  while (merge_clusters_once(clusters, distance)) {
  }
  return clusters;
}

std::vector<int> map_clusters_to_workers(const TaskGraph& graph, const Clusters& clusters,
                                         int improvement_rounds) {
  int workers = static_cast<int>(graph.machine.size());
  std::vector<int> worker_of_cluster(clusters.size(), 0);
  std::vector<double> load(workers, 0);
  if (!clusters.empty()) load[0] = load_of(graph, clusters[0]);
  std::vector<std::size_t> by_load(clusters.size());
  std::iota(by_load.begin(), by_load.end(), 0);
  std::sort(by_load.begin() + (clusters.empty() ? 0 : 1), by_load.end(),
            [&](std::size_t a, std::size_t b) {
              return load_of(graph, clusters[a]) > load_of(graph, clusters[b]);
            });
  for (std::size_t i = 1; i < by_load.size(); ++i) {
    std::size_t cluster = by_load[i];
    int target = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    worker_of_cluster[cluster] = target;
    load[target] += load_of(graph, clusters[cluster]);
  }

  AppendScheduler scheduler(graph, upward_rank_order(graph));
  auto assignment = [&] {
    std::vector<int> worker_of_task(graph.tasks.size(), 0);
    for (std::size_t c = 0; c < clusters.size(); ++c) {
      for (int task : clusters[c]) worker_of_task[task] = worker_of_cluster[c];
    }
    return worker_of_task;
  };
  // Load balance ignores transfers and waiting; moving whole clusters under the simulator's
  // makespan fixes what it got wrong. The critical cluster stays on worker 0.
  double best = scheduler.makespan(assignment());
  for (int round = 0; round < improvement_rounds; ++round) {
    bool improved = false;
    for (std::size_t c = 1; c < clusters.size(); ++c) {
      int original = worker_of_cluster[c];
      for (int w = 0; w < workers; ++w) {
        if (w == original) continue;
        worker_of_cluster[c] = w;
        double makespan = scheduler.makespan(assignment());
        if (makespan < best - 1e-12) {
          best = makespan;
          original = w;
          improved = true;
        }
      }
      worker_of_cluster[c] = original;
    }
    if (!improved) break;
  }
  return assignment();
}

Plan plan_linear_clustering(const TaskGraph& graph, const LinearClusteringOptions& options) {
  if (graph.machine.size() == 0) throw Error("lc: the machine has no workers");
  std::vector<double> distance = distance_to_end(graph);
  Clusters linear = linear_clusters(graph, distance);
  Clusters merged = options.merge ? merge_clusters(linear, distance) : linear;
  std::vector<int> worker_of_task =
      map_clusters_to_workers(graph, merged, options.improvement_rounds);
  AppendScheduler scheduler(graph, upward_rank_order(graph));
  Plan plan = scheduler.to_plan(worker_of_task, "lc");
  plan.notes["clusters_before_merge"] = linear.size();
  plan.notes["clusters_after_merge"] = merged.size();
  return plan;
}

}  // namespace cleave
