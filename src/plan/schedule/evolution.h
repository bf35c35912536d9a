// Biased (1+1) evolutionary algorithm over task-to-device assignments (the paper's EA baseline).
#pragma once

#include <cstdint>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct EvolutionOptions {
  uint64_t seed = 1;
  int64_t max_iterations = 200000;  ///< Offspring generated, feasible or not.
  double time_limit_seconds = 10;   ///< Stops early when reached (then runs are not repeatable).
};

/// "Biased" because it starts from each task on its fastest device (MET's assignment, with
/// memory respected) rather than a random one. Each generation copies the parent and
/// reassigns every movable task with probability 1/n (at least one task), picking the new
/// device with probability proportional to its speed for that task (1 / time). The child
/// replaces the parent when its makespan, by list scheduling in upward-rank order, is not
/// worse; children that overflow a device's memory are discarded. notes: iterations,
/// improvements, rejected_for_memory, start_makespan.
Plan plan_evolution(const TaskGraph& graph, const EvolutionOptions& options = {});

}  // namespace cleave
