// Pipelined stages as a task plan on a machine file's devices, so MPI ranks run them as stages.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "machine/machine.h"
#include "stream/stages.h"

namespace cleave {

/// `graph` cut into `stages` stages balancing `costs` at `threads` intra-op threads
/// (graph_to_stages on the cost table's seconds).
StagedStream stage_cut(const Graph& graph, const CostTable& costs, int stages, int threads);

/// The stage of every node (by NodeId) of a cut of `graph` (graph_to_stages: contiguous runs
/// of stage_nodes nodes of the topological order).
std::vector<int> stage_of_nodes(const Graph& graph, const StagedStream& staged);

/// The model cut into `stages` stages (graph_to_stages balancing `costs` at the first
/// device's threads), stage k's nodes on device k, for a stream of `samples` samples: the task
/// graph repeated per sample, each device running its stage for one sample after another, so
/// that device k works on sample s while device k + 1 works on sample s - 1. Devices beyond
/// `stages` get no task. Rank 0 hands the inputs out and gathers the outputs
/// (ModelValues::kFromRank0), and the one simulator prices every hand-off on the machine's
/// links. family "pipeline", strategy "pipeline", batch `samples`. Throws Error when `stages`
/// is not in 2..min(devices, nodes).
ModelPlan stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine, int stages,
                     int samples);

/// `cleave plan --strategy pipeline --machine FILE`: plan_costs, then best_stage_plan on
/// options.machine for options.samples, the plan recording its cost source, convolution family
/// and planning time as plan_model's plans do.
CostedPlan plan_stages_with_costs(const Graph& graph, const std::string& source,
                                  const ModelPlanOptions& options,
                                  const std::function<void(const std::string&)>& progress);

/// The stage_plan of least simulated makespan over 2..min(devices, nodes, 16) stages. Throws
/// Error for a machine of fewer than two devices.
ModelPlan best_stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine,
                          int samples);

}  // namespace cleave
