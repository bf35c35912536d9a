// The Plan of a split: the partitioned graph's nodes as tasks, each machine a worker.
#pragma once

#include <string>

#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "spatial/partitioned_graph.h"

namespace cleave {

/// A plan of `graph` — the partitioned graph, or the same graph re-imported from
/// partitioned.onnx, matched by node name — putting every node on its machine's worker in
/// topological order, timed by the simulator on `costs`' task graph over `machine` (one
/// device per split machine). So the thread executor, the simulator and the Gantt charts run a
/// split unchanged. With several `samples`, each machine runs its tasks for one sample after
/// another (Task::batch_begin the sample), as a batch of that many. `values`: kFromRank0 where
/// the machines are MPI ranks (the model's inputs and outputs priced through rank 0). Throws
/// Error when a node of `graph` is not in the split.
ModelPlan split_plan(const Graph& graph, const PartitionedGraph& split, const CostTable& costs,
                     const Machine& machine, int samples = 1,
                     ModelValues values = ModelValues::kShared);

}  // namespace cleave
