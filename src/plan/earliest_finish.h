// Earliest-finish-time list scheduling, the one scheduler behind HEFT and greedy.
#pragma once

#include <string>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct EarliestFinishOptions {
  /// Visit tasks by upward rank (HEFT); otherwise in topological order (greedy).
  bool upward_rank_order = true;
  /// Let a task fill an idle gap between tasks already placed on a worker; otherwise append.
  bool insertion = true;
  /// The plan's strategy name, also used in errors.
  std::string planner = "heft";
};

/// Puts each task, in the chosen order, on the worker where it finishes earliest, counting the
/// transfers of its inputs; workers without memory left for its weights are skipped. Throws
/// Error naming the task when it fits nowhere.
Plan plan_earliest_finish(const TaskGraph& graph, const EarliestFinishOptions& options);

}  // namespace cleave
