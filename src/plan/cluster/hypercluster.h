// Hyperclustering: several samples in flight, cluster copies interleaved to fill idle slack.
#pragma once

#include "plan/cluster/cloning.h"
#include "plan/cluster/linear_clustering.h"

namespace cleave {

/// The per-sample graph repeated for `samples` samples: task t of sample s is task
/// s * n + t, named "<name>@<s>", with batch_begin = s and batch_end = s + 1.
TaskGraph replicate_for_samples(const TaskGraph& per_sample, int samples);

struct HyperclusterOptions {
  int samples = 2;
  /// Switched hyperclusters: each sample's clusters may go to different workers, chosen to
  /// balance the workers' total load (the paper's pairing of dissimilar clusters, done for
  /// any graph); plain hyperclusters keep every sample's cluster on the same worker.
  bool switched = false;
};

/// Clusters the per-sample graph with linear clustering and merging, maps the clusters to
/// workers, then places every sample's copy and interleaves the copies on each worker.
/// Among the candidate mappings (plain, rotated, load-balanced) the switched variant keeps the
/// one with the shortest simulated makespan.
PlannedTasks plan_hypercluster(const TaskGraph& per_sample, const HyperclusterOptions& options);

}  // namespace cleave
