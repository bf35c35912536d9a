// The one table of planners: every strategy by name, with its family, options and result.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plan/cluster/cloning.h"
#include "plan/plan.h"
#include "plan/schedule/schedulers.h"
#include "plan/task_graph.h"

namespace cleave {

/// Where a planner comes from, which decides the commands that offer it.
enum class PlannerFamily {
  kTaskParallel,   ///< Ramiel: clusters of one model on CPU cores (`cleave plan`, `run --plan`).
  kHeterogeneous,  ///< DiviML: mapping onto devices (also `cleave schedule`, on any task graph).
  /// Filter placement of a stream program on worker threads (`cleave stream run --placement`).
  /// They place a stream graph, which sits above this layer: stream/stream_planner.cc runs
  /// them by name, and their `run` refuses a task graph.
  kStream
};

/// A planner's one signature: one sample's task graph on its machine, the samples in flight,
/// and the options. Planners that copy tasks (cloning) or plan several samples return the task
/// graph their plan indexes; the others return `graph` itself.
using PlannerFunction =
    std::function<PlannedTasks(const TaskGraph& graph, int samples, const ScheduleOptions&)>;

struct PlannerEntry {
  std::string name;
  PlannerFamily family = PlannerFamily::kHeterogeneous;
  std::string description;
  /// Plans several samples in flight (hyperclusters); the others plan exactly one.
  bool plans_samples = false;
  /// Among the candidates `auto` simulates against the sequential plan.
  bool auto_candidate = false;
  PlannerFunction run;
  /// Planners that copy tasks onto several workers (cloning): the planner whose plan they
  /// copy from, which plans instead where each node must run once. Empty for the others.
  std::string before_copies;
};

/// Every planner, registered once, in the order `--help` lists them. A new planner is one
/// file and one line here.
const std::vector<PlannerEntry>& planners();
/// The registered task-graph planner (not of the stream family) of this name; throws Error
/// listing the names for an unknown one.
const PlannerEntry& find_planner(const std::string& name);
/// Throws Error unless `planner` can plan `samples` samples in flight.
void check_samples(const PlannerEntry& planner, int samples);
/// The names of the registered planners of `family`, in table order.
std::vector<std::string> planner_names(PlannerFamily family);

}  // namespace cleave
