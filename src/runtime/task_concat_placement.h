// In-place Concat over the tasks of a task loop: the one planning step of the thread and MPI
// executors.
#pragma once

#include <span>

#include "ir/graph.h"
#include "runtime/concat_placement.h"
#include "runtime/task_loop.h"

namespace cleave {

/// place_concat_inputs over the kernels that the last run of `loop` prepared, for the values
/// made by the tasks in `tasks` (the executor's own; a value made elsewhere, such as on another
/// rank, is not placed, and so neither is its Concat). A node run by several tasks of one of
/// the `samples` samples (a cloned producer) is left out: its copies would write one slice.
ConcatPlacement place_concat_inputs_of_tasks(const Graph& graph, const TaskLoop& loop,
                                             std::span<const int> tasks, int samples);

}  // namespace cleave
