// Which weights a rank keeps: those its own tasks read.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

/// The initializers the tasks of `worker` read (rank 0 also keeps those that are graph
/// outputs), sorted.
std::vector<ValueId> initializers_of_worker(const Graph& graph, const TaskGraph& tasks,
                                            const Plan& plan, int worker);
/// Drops the bytes of every initializer that no task of `worker` reads; returns the bytes kept.
double keep_weights_of(Graph& graph, const TaskGraph& tasks, const Plan& plan, int worker);

}  // namespace cleave
