// Limited task cloning: copy a cheap producer onto a consumer's worker when that helps.
#pragma once

#include <cstdint>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct CloneOptions {
  /// A task is cheap enough to duplicate when its mean time is at most this fraction of
  /// the plan's makespan.
  double cheap_fraction = 0.05;
  /// Clones allowed, as a fraction of the task count (at least one).
  double max_growth = 0.10;
  /// Clones tried (each a whole re-schedule) before the search stops; -1: no bound. Bounds
  /// planning time on graphs of thousands of tasks.
  int64_t max_trials = -1;
};

/// A plan together with the task graph it schedules (cloning adds tasks).
struct PlannedTasks {
  TaskGraph tasks;
  Plan plan;
};

/// Starting from `base` (a plan of `graph`), repeatedly clones a cheap task whose output
/// crosses to another worker onto that worker (the clone reads the original's inputs and
/// feeds that worker's consumers) when the simulated makespan shrinks. Clones are named
/// "<task>@clone<k>" and keep Task::node, so the executor runs the same node twice.
PlannedTasks plan_with_cloning(const TaskGraph& graph, const Plan& base,
                               const CloneOptions& options = {});

}  // namespace cleave
