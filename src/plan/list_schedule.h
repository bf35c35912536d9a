// Building blocks the list-scheduling planners share: ranks, memory bookkeeping, fast evaluation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"

namespace cleave {

/// Mean time of a task over the devices that can run it.
double mean_task_time(const Task& task);
/// Mean seconds an edge costs over ordered pairs of distinct linked devices (0 with one device),
/// with priced message ends (Machine::endpoint_bandwidth) plus the sender's and reader's copies.
double mean_edge_time(const TaskGraph& graph, std::size_t edge);
/// HEFT's upward rank: mean time plus the costliest path (mean edge cost + rank) to an exit.
std::vector<double> upward_rank(const TaskGraph& graph);
/// Tasks by decreasing upward rank, ties broken by topological position: a topological order.
std::vector<int> upward_rank_order(const TaskGraph& graph);
/// The device with the smallest time for the task (lowest index on ties).
int fastest_device(const Task& task);
/// Tasks that can run on more than one device: the only ones a search's move can change.
std::vector<int> movable_tasks(const TaskGraph& graph);

/// Incremental per-device weight memory: tasks of one weight group share one copy per device.
class MemoryTracker {
 public:
  explicit MemoryTracker(const TaskGraph& graph);
  /// With each device holding at most `capacity[device]` bytes instead of its memory_bytes.
  MemoryTracker(const TaskGraph& graph, std::vector<double> capacity);
  /// Whether placing `task` on `device` keeps the device within its memory.
  bool fits(int task, int device) const;
  /// Whether moving `task` from `from` to `to` keeps `to` within its memory.
  bool fits_move(int task, int from, int to) const;
  void add(int task, int device);
  void remove(int task, int device);
  double used(int device) const { return used_.at(device); }

 private:
  double added_bytes(int task, int device) const;

  const TaskGraph* graph_;
  std::vector<int> key_of_task_;   // weight-sharing key per task
  std::vector<double> key_bytes_;  // bytes per key (largest member)
  std::vector<int> holders_;       // [device * keys + key]: tasks of the key on the device
  std::vector<double> used_;       // per device
  std::vector<double> capacity_;   // per device
  std::size_t key_count_ = 0;
};

/// Places tasks on their fastest device that still has memory for them, in `priority` order.
/// Throws Error naming a task whose weights fit on no device.
std::vector<int> fastest_feasible_assignment(const TaskGraph& graph,
                                             const std::vector<int>& priority,
                                             const std::string& planner);

/// Evaluates assignments by appending every task, in a fixed topological priority order, to the
/// end of its worker's order: the schedule the simulator reproduces exactly.
class AppendScheduler {
 public:
  AppendScheduler(const TaskGraph& graph, std::vector<int> priority);
  /// Makespan of the assignment; +inf when a task cannot run on its worker or data would cross
  /// a missing link. With priced message ends (Machine::endpoint_bandwidth) it is the
  /// simulator's (simulate_orders); otherwise the same list schedule without busy times and
  /// dispatch overheads, faster.
  double makespan(const std::vector<int>& worker_of_task) const;
  /// The plan for the assignment: per-worker orders follow the priority order; times come from
  /// the simulator, and notes.planner_makespan from this scheduler's own estimate.
  Plan to_plan(const std::vector<int>& worker_of_task, const std::string& strategy) const;
  const std::vector<int>& priority() const { return priority_; }

 private:
  const TaskGraph* graph_;
  std::vector<int> priority_;
  std::vector<std::vector<int>> in_edges_;
  mutable std::vector<double> finish_;
  mutable std::vector<double> worker_free_;
  std::optional<OrdersClock> clock_;  // with priced message ends
  mutable std::vector<std::vector<int>> order_;
};

/// Fills a plan's times from the simulator and records the planner's own makespan estimate in
/// notes.planner_makespan, so tests can check that both agree.
void finish_plan(Plan& plan, const TaskGraph& graph, double planner_makespan);

}  // namespace cleave
