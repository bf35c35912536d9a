// One entry point for every planner that works on a task graph, chosen by name.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/schedule/lower_bound.h"
#include "plan/task_graph.h"

namespace cleave {

/// Options every task-graph planner understands; each ignores what does not apply to it.
struct ScheduleOptions {
  std::string objective = "latency";  ///< "latency" or "throughput" (recorded in the plan).
  int64_t batch = 1;                  ///< Samples the graph covers (recorded in the plan).
  double time_limit_seconds = 10;     ///< For searches and solvers.
  uint64_t seed = 1;                  ///< For randomised searches.
  int64_t max_iterations = 200000;    ///< For annealing and evolution.
  std::string symmetry = "none";      ///< MILP symmetry breaking: none, tasks, time, batch.
  int channels = 0;                   ///< MILP-SPLIT channels between modules (0: automatic).
  int solver_processes = 0;           ///< MILP-SPLIT module solves at once (0: one per core).
  int solver_threads = 1;             ///< Whole-graph MILP: CBC threads (0: one per core).
  /// MILP and MILP-SPLIT module solves stop once (incumbent - bound) / incumbent is below this.
  double relative_gap = 1e-6;
  /// Plan on contract_chains' coarser graph and expand the plan back (plan/coarsen.h).
  bool coarsen = false;
  /// Cloning: clones tried before it stops (-1: no bound; CloneOptions::max_trials).
  int64_t clone_trials = -1;
};

using Scheduler = std::function<Plan(const TaskGraph&, const ScheduleOptions&)>;
/// The bound's result: its makespan, and whether options.time_limit_seconds cut it short.
using LowerBound = std::function<LowerBoundResult(const TaskGraph&, const ScheduleOptions&)>;

struct SchedulerEntry {
  std::string name;
  std::string description;
  Scheduler run;
};

/// The planners by name, in the order `cleave schedule --help` lists them.
const std::vector<SchedulerEntry>& schedulers();
/// Runs the named planner (on the contracted chains when options.coarsen, the plan expanded
/// back to `graph`'s tasks) and stamps objective, batch and solve time (notes.solve_seconds)
/// into its plan. Throws Error listing the known names for an unknown one.
Plan schedule(const TaskGraph& graph, const std::string& algo, const ScheduleOptions& options);
/// The registered lower bound on the optimal makespan, if one is built in (nullopt otherwise).
std::optional<LowerBound> lower_bound_function();

}  // namespace cleave
