// MET, minimum execution time: every task on the device where it runs fastest.
#pragma once

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct MetOptions {};

/// Puts each task on its fastest device that still has memory for its weights (upward-rank
/// order decides who gets a full device first); each worker runs its tasks in upward-rank
/// order. Ignores communication, which is what makes it a baseline. Throws Error when a task
/// fits on no device.
Plan plan_met(const TaskGraph& graph, const MetOptions& options = {});

}  // namespace cleave
