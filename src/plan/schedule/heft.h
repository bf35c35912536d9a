// HEFT, heterogeneous earliest finish time (Topcuoglu et al.), insertion-based.
#pragma once

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct HeftOptions {
  /// Let a task fill an idle gap between tasks already placed on a worker (classic HEFT).
  bool insertion = true;
  /// Seconds for the search (0: none); the tasks left then are appended cheaply, and the
  /// plan's notes say so (see EarliestFinishOptions).
  double time_limit_seconds = 0;
};

/// Orders tasks by upward rank (mean time over devices plus the costliest path of mean edge
/// costs to an exit), then puts each where it finishes earliest, using the earliest idle slot
/// long enough for it. Devices without memory left for its weights are skipped.
Plan plan_heft(const TaskGraph& graph, const HeftOptions& options = {});

}  // namespace cleave
