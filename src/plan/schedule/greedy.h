// Greedy: each task, in topological order, goes where it would finish earliest.
#pragma once

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct GreedyOptions {
  /// Seconds for the search (0: none); the tasks left then are appended cheaply, and the
  /// plan's notes say so (see EarliestFinishOptions).
  double time_limit_seconds = 0;
};

/// The paper's greedy baseline: visits tasks in topological order (smallest index first among
/// ready tasks) and appends each to the end of the worker where it would finish earliest,
/// counting the transfers of its inputs; devices without memory left for its weights are
/// skipped. No insertion into idle gaps, no look-ahead.
Plan plan_greedy(const TaskGraph& graph, const GreedyOptions& options = {});

}  // namespace cleave
