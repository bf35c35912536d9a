// In-place Concat over the tasks of a task loop: the one planning step of the thread and MPI
// executors.
#pragma once

#include <functional>
#include <span>

#include "ir/graph.h"
#include "runtime/concat_placement.h"
#include "runtime/task_loop.h"

namespace cleave {

/// place_concat_inputs over the kernels that the last run of `loop` prepared, for the values
/// made by the tasks in `tasks` (the executor's own). A node run by several tasks of one of
/// the `samples` samples (a cloned producer) is left out: its copies would write one slice.
///
/// A value made elsewhere (on another rank) is placed only where `received` gives its spec as
/// it arrives (the MPI executor: the first run's message) and its Concat receives such values
/// in place (concat_inputs_received_in_place); without `received` it is not placed.
ConcatPlacement place_concat_inputs_of_tasks(
    const Graph& graph, const TaskLoop& loop, std::span<const int> tasks, int samples,
    const std::function<const OutputSpec*(ValueId)>& received = {});

}  // namespace cleave
