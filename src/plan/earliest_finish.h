// Earliest-finish-time list scheduling, the one scheduler behind HEFT, greedy and the MILP's
// warm start.
#pragma once

#include <string>
#include <vector>

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
  /// Wall-clock seconds for the search over devices (0: no limit). Once spent, the remaining
  /// tasks are appended to a producer's device or their fastest one (see fallback_tasks).
  double time_limit_seconds = 0;
  /// Largest tasks² · devices for which, with priced message ends, every candidate is timed by
  /// the simulator's clock; above it candidates keep the link's price (the plan made is still
  /// predicted by the simulator). A 1,833-task graph on 64 ranks took 7.9 s to plan clocked, 0.3
  /// s priced by the link (issue 46 item 4: under 1 s); 1.6e7 is about 0.3 s of clocked search.
  double clocked_placement_steps = 1.6e7;
};

/// Restrictions beyond the task graph's own, as the MILP's warm start has them (a module of
/// MILP-SPLIT that starts after others); each one left empty restricts nothing.
struct EarliestFinishLimits {
  /// [task][device]: whether the task may run there (besides having a finite time there).
  const std::vector<std::vector<bool>>* allowed = nullptr;
  /// [task][device]: the earliest the task may start there, in seconds.
  const std::vector<std::vector<double>>* ready = nullptr;
  /// [device]: bytes of weights the device can still hold (default: its memory_bytes).
  const std::vector<double>* memory_capacity = nullptr;
};

/// Where and when earliest-finish scheduling put each task.
struct EarliestFinishSchedule {
  std::vector<int> worker;              ///< Per task; -1 from `unplaced` on.
  std::vector<double> start;            ///< Per task, seconds.
  std::vector<std::vector<int>> order;  ///< Per worker, its tasks by start time.
  double makespan = 0;
  int unplaced = -1;  ///< The first task that fitted nowhere (scheduling stopped there); -1.
  /// Tasks placed by the cheap fallback after the time limit ran out (0: none).
  std::size_t fallback_tasks = 0;
};

/// Puts each task, in the chosen order, on the worker where it finishes earliest, counting the
/// transfers of its inputs, skipping workers the limits or memory rule out. Stops at the first
/// task that fits nowhere (`unplaced`). With priced message ends (Machine::endpoint_bandwidth)
/// and no ready times, each candidate's finish and the schedule's times are the simulator's
/// (simulate_orders over the schedule so far): a quadratic search, as every placement can move
/// the tasks placed before it, bounded by EarliestFinishOptions::clocked_placement_steps.
EarliestFinishSchedule schedule_earliest_finish(const TaskGraph& graph,
                                                const EarliestFinishOptions& options,
                                                const EarliestFinishLimits& limits = {});

/// Puts each task, in the chosen order, on the worker where it finishes earliest, counting the
/// transfers of its inputs; workers without memory left for its weights are skipped. Throws
/// Error naming the task when it fits nowhere. When the time limit cut the search short, the
/// plan's notes say so (time_limit_reached, fallback_tasks).
Plan plan_earliest_finish(const TaskGraph& graph, const EarliestFinishOptions& options);

}  // namespace cleave
