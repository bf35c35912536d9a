// Hyperclusters and switched hyperclusters over copies of a per-sample task graph.
#include "plan/cluster/hypercluster.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "ir/graph.h"
#include "plan/list_schedule.h"

namespace cleave {

TaskGraph replicate_for_samples(const TaskGraph& per_sample, int samples) {
  if (samples < 1) throw Error("hypercluster: the number of samples must be at least 1");
  TaskGraph result;
  result.machine = per_sample.machine;
  int n = static_cast<int>(per_sample.tasks.size());
  // The samples' copies of a task read one copy of its weights on a device (unless the tasks
  // already share weights in groups of their own, the slices of a batched graph).
  const bool grouped = std::any_of(per_sample.tasks.begin(), per_sample.tasks.end(),
                                   [](const Task& task) { return task.weight_group >= 0; });
  for (int s = 0; s < samples; ++s) {
    for (int t = 0; t < n; ++t) {
      const Task& task = per_sample.tasks[t];
      Task copy = task;
      copy.name = fmt::format("{}@{}", task.name, s);
      copy.batch_begin = s;
      copy.batch_end = s + 1;
      if (!grouped && samples > 1) copy.weight_group = t;
      result.tasks.push_back(std::move(copy));
    }
    for (const auto& [from, to] : per_sample.edges)
      result.edges.emplace_back(s * n + from, s * n + to);
  }
  return result;
}

PlannedTasks plan_hypercluster(const TaskGraph& per_sample, const HyperclusterOptions& options) {
  int n = static_cast<int>(per_sample.tasks.size());
  int workers = static_cast<int>(per_sample.machine.size());
  std::vector<double> distance = distance_to_end(per_sample);
  Clusters clusters = merge_clusters(linear_clusters(per_sample, distance), distance);
  std::vector<int> base = map_clusters_to_workers(per_sample, clusters, 8);
  std::vector<int> cluster_of(n, 0);
  std::vector<int> base_worker_of_cluster(clusters.size(), 0);
  std::vector<double> cluster_load(clusters.size(), 0);
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    for (int task : clusters[c]) {
      cluster_of[task] = static_cast<int>(c);
      cluster_load[c] += mean_task_time(per_sample.tasks[task]);
    }
    base_worker_of_cluster[c] = base[clusters[c].front()];
  }

  TaskGraph all = replicate_for_samples(per_sample, options.samples);
  AppendScheduler scheduler(all, upward_rank_order(all));
  auto expand = [&](const std::vector<std::vector<int>>& worker_of_cluster_per_sample) {
    std::vector<int> assignment(all.tasks.size());
    for (int s = 0; s < options.samples; ++s) {
      for (int t = 0; t < n; ++t)
        assignment[s * n + t] = worker_of_cluster_per_sample[s][cluster_of[t]];
    }
    return assignment;
  };

  std::vector<std::vector<int>> plain(options.samples, base_worker_of_cluster);
  std::vector<std::vector<std::vector<int>>> candidates{plain};
  if (options.switched && workers > 1) {
    std::vector<std::vector<int>> rotated = plain;
    for (int s = 0; s < options.samples; ++s) {
      for (int& w : rotated[s]) w = (w + s) % workers;
    }
    candidates.push_back(rotated);
    // Balance: the heaviest cluster of each sample goes to the worker with the least load so
    // far, pairing heavy clusters of one sample with light ones of another.
    std::vector<std::vector<int>> balanced = plain;
    std::vector<double> load(workers, 0);
    for (std::size_t c = 0; c < clusters.size(); ++c)
      load[base_worker_of_cluster[c]] += cluster_load[c];
    std::vector<std::size_t> by_load(clusters.size());
    std::iota(by_load.begin(), by_load.end(), 0);
    std::sort(by_load.begin(), by_load.end(),
              [&](auto a, auto b) { return cluster_load[a] > cluster_load[b]; });
    for (int s = 1; s < options.samples; ++s) {
      for (std::size_t c : by_load) {
        int target = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
        balanced[s][c] = target;
        load[target] += cluster_load[c];
      }
    }
    candidates.push_back(balanced);
  }
  std::vector<int> best_assignment;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& candidate : candidates) {
    std::vector<int> assignment = expand(candidate);
    double makespan = scheduler.makespan(assignment);
    if (makespan < best) {
      best = makespan;
      best_assignment = std::move(assignment);
    }
  }
  PlannedTasks result{
      all, scheduler.to_plan(best_assignment,
                             options.switched ? "switched-hypercluster" : "hypercluster")};
  result.plan.batch = options.samples;
  result.plan.objective = "throughput";
  result.plan.notes["clusters_after_merge"] = clusters.size();
  return result;
}

}  // namespace cleave
