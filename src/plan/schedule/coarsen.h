// Chain contraction: a coarser task graph for the schedulers, and its plans mapped back.
#pragma once

#include <vector>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

/// A task graph whose tasks each stand for a chain of tasks of a finer graph.
struct CoarseGraph {
  TaskGraph graph;
  /// Per coarse task, the fine tasks it runs, in chain order.
  std::vector<std::vector<int>> members;
  /// Per fine task, its coarse task.
  std::vector<int> coarse_of_task;
};

/// Contracts every maximal chain a -> b -> ... in which each task's only successor is the next
/// and the next's only predecessor is the previous (an RWNN node's last Add, Relu and Conv; a
/// Conv and its activation): no schedule gains anything from splitting such a chain except by
/// running its parts on different devices, which costs a transfer inside a dependence that is
/// serial anyway. What the DiviML paper's coarse torch.fx graphs do by construction. A chain's
/// time on a device is the sum of its members' (infinite if any is), its output bytes and
/// outgoing edges are its last member's, its incoming edges its first member's, its weight
/// bytes the sum. Tasks with a weight_group (slices of a batched graph) are left alone, so a
/// batched graph keeps its slices. A graph without such chains comes back unchanged (one member
/// per task).
CoarseGraph contract_chains(const TaskGraph& graph);

/// The plan of the fine graph that runs every coarse task's members back to back on its worker,
/// in the coarse plan's order; times from the simulator. Notes are copied, and notes.coarse_tasks
/// says how many tasks the planner saw.
Plan expand_plan(const Plan& coarse_plan, const CoarseGraph& coarse, const TaskGraph& fine);

}  // namespace cleave
