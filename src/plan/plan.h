// The one result of every planner: which worker runs each task, in which order, and when.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "plan/task_graph.h"

namespace cleave {

struct PlannedTask {
  int task = -1;     ///< Index into TaskGraph::tasks.
  int worker = -1;   ///< Index into Machine::devices.
  double start = 0;  ///< Predicted start and finish, seconds.
  double finish = 0;
};

/// A value moving between workers, derived from the assignment.
struct Transfer {
  int producer_task = -1;
  int consumer_task = -1;
  int from_worker = -1;
  int to_worker = -1;
  double bytes = 0;
};

struct Plan {
  std::string strategy;               ///< Planner that made it: "heft", "lc", ...
  std::string objective = "latency";  ///< "latency" or "throughput".
  int64_t batch = 1;
  std::vector<PlannedTask> tasks;       ///< Indexed by task id.
  std::vector<std::vector<int>> order;  ///< Per worker, its task ids in execution order.
  double makespan = 0;                  ///< Predicted, seconds.
  nlohmann::json notes = nlohmann::json::object();  ///< Planner extras: gap, solve time, ...

  /// Transfers implied by the assignment (one per cross-worker edge).
  std::vector<Transfer> transfers(const TaskGraph& graph) const;
};

/// Checks that every task is placed exactly once, on an existing worker that can run it,
/// and that the per-worker orders are consistent with the edges (so execution cannot
/// deadlock). Throws Error with the reason (naming tasks and workers).
/// Device memory is checked too: per worker, the weights of its tasks (shared weight groups
/// counted once) must fit in its memory_bytes. Cross-worker edges need a link.
void validate_plan(const Plan& plan, const TaskGraph& graph);

/// Tasks in an order that executing the plan can follow: a topological order of the DAG edges
/// plus each worker's order. Throws Error when a task is missing, listed twice or on the wrong
/// worker, or when the orders deadlock (naming the tasks and workers that wait on each other).
std::vector<int> execution_order(const Plan& plan, const TaskGraph& graph);

/// Per worker, the resident weight bytes of the tasks `worker_of_task` puts on it (tasks of one
/// non-negative weight_group share a copy).
std::vector<double> weight_bytes_per_worker(const TaskGraph& graph,
                                            const std::vector<int>& worker_of_task);
/// The first worker whose weights exceed its memory under this assignment, or -1 when all fit.
int over_memory_worker(const TaskGraph& graph, const std::vector<int>& worker_of_task);

/// Writes workers and tasks by name (schema in docs/formats.md, "Plan files").
nlohmann::json plan_to_json(const Plan& plan, const TaskGraph& graph);
/// Reads a plan on its own: task ids are positions in "tasks", workers positions in "workers".
Plan plan_from_json(const nlohmann::json& json, const std::string& origin);
/// Reads a plan for `graph`, matching tasks and workers by name (any order), then validates it.
Plan plan_from_json(const nlohmann::json& json, const TaskGraph& graph, const std::string& origin);
Plan read_plan(const std::string& path, const TaskGraph& graph);
/// Writes the plan atomically (temporary file in the same folder, then rename).
void write_plan(const Plan& plan, const TaskGraph& graph, const std::string& path);

}  // namespace cleave
