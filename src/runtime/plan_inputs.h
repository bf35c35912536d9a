// Where each task of a plan finds its inputs: shared by the executors that run plans.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/task_graph.h"
#include "runtime/task_input.h"

namespace cleave {

/// A plan's tasks resolved against the graph: who runs what, and what each task reads.
struct PlanInputs {
  int samples = 1;                             ///< Samples one run of the plan covers.
  std::vector<int> worker;                     ///< Per task: the worker whose order lists it.
  std::vector<int> position;                   ///< Per task: its index in that order.
  std::vector<std::vector<TaskInput>> inputs;  ///< Per task, per input of its node.
  std::map<std::pair<NodeId, int>, std::vector<int>> tasks_of;  ///< (node, sample) -> tasks.
};

/// Validates the plan (validate_plan) and resolves every task's inputs. A cloned producer is
/// read from the copy that runs earlier on the reader's worker, else the one the task graph
/// connects, else any. Throws Error naming the task when a task's node is not in the graph,
/// a task covers more than one sample, a node is not run for some sample, or a task reads a
/// producer that neither an edge nor its worker's order puts before it.
PlanInputs resolve_plan_inputs(const Graph& graph, const TaskGraph& tasks, const Plan& plan);

/// The index of `value` among its producer node's outputs.
int output_index(const Graph& graph, ValueId value);

}  // namespace cleave
