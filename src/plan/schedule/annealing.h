// Simulated annealing over task-to-device assignments (the paper's SA baseline).
#pragma once

#include <cstdint>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct AnnealingOptions {
  uint64_t seed = 1;
  int64_t max_iterations = 200000;  ///< Proposed moves, feasible or not.
  double time_limit_seconds = 10;   ///< Stops early when reached (then runs are not repeatable).
  /// Starting temperature in seconds of makespan; 0: chosen so that an average worsening move
  /// from the start is accepted with probability 1/2.
  double initial_temperature = 0;
  /// The temperature falls geometrically to initial * final_temperature_ratio at the end of
  /// the budget (iterations or time, whichever is used up faster).
  double final_temperature_ratio = 1e-3;
};

/// Starts from MET's assignment (each task on its fastest device with memory left), then
/// repeatedly moves one random task to another random device that can run it and has memory
/// for it. A move is evaluated by list scheduling in upward-rank order (the AppendScheduler):
/// better moves are kept, worse ones with probability exp(-worsening / temperature). Returns
/// the best assignment seen. notes: iterations, accepted, rejected_for_memory, start_makespan.
Plan plan_annealing(const TaskGraph& graph, const AnnealingOptions& options = {});

}  // namespace cleave
