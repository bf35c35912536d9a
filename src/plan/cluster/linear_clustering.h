// Ramiel's task parallelism: recursive critical-path linear clustering, merging, worker mapping.
#pragma once

#include <vector>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

/// A clustering: disjoint sets of task ids that together cover the graph; each set runs on
/// one worker. Cluster 0 is the critical path.
using Clusters = std::vector<std::vector<int>>;

/// distance_to_end of every task: its time plus the longest (time + edge cost) path to an
/// exit. Times are the mean over devices; edge costs the mean transfer time, as HEFT's rank.
std::vector<double> distance_to_end(const TaskGraph& graph);

/// Algorithm 1: repeatedly take the ready task farthest from the end and follow the successor
/// farthest from the end, removing the path, until every task is in a linear cluster.
Clusters linear_clusters(const TaskGraph& graph, const std::vector<double>& distance);

/// Algorithm 2: one merging round; merges pairs whose spans [distance(exit), distance(entry)]
/// do not overlap. Returns whether any pair merged.
bool merge_clusters_once(Clusters& clusters, const std::vector<double>& distance);
/// Algorithm 3: merging rounds to a fixed point.
Clusters merge_clusters(Clusters clusters, const std::vector<double>& distance);

struct LinearClusteringOptions {
  bool merge = true;           ///< Run Algorithms 2–3.
  int improvement_rounds = 8;  ///< Rounds of single-cluster moves checked by the simulator.
};

/// The full `lc` planner: clusters, merged, then mapped onto the machine's workers (largest
/// load first onto the least loaded worker, the critical cluster kept whole on worker 0,
/// then moves of whole clusters while the simulator says the makespan shrinks).
/// notes: clusters_before_merge, clusters_after_merge.
Plan plan_linear_clustering(const TaskGraph& graph, const LinearClusteringOptions& options = {});

/// Map clusters to workers as plan_linear_clustering does; returns worker per task.
std::vector<int> map_clusters_to_workers(const TaskGraph& graph, const Clusters& clusters,
                                         int improvement_rounds);

}  // namespace cleave
