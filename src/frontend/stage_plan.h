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

namespace cleave {

/// Nodes per stage of the topological order cut into devices.size() contiguous stages, stage k
/// run by device devices[k] of `per_sample` (one task per node in topological order, as
/// task_graph_for makes it): the cut whose slowest stage, each priced at its own device's time
/// (the device's threads and speed), is fastest; every stage has a node. A half-speed device so
/// gets about half the work of a full-speed one.
std::vector<int64_t> balanced_stage_nodes(const TaskGraph& per_sample,
                                          const std::vector<int>& devices);

/// The model cut into `stages` stages, stage k's nodes on device `devices[k]` (default: device
/// k) balanced at each device's own time (balanced_stage_nodes), for a stream of `samples`
/// samples: the task graph repeated per sample, each device running its stage for one sample
/// after another, so that one device works on sample s while the next works on sample s - 1.
/// Devices not named get no task. Rank 0 hands the inputs out and gathers the outputs
/// (ModelValues::kFromRank0), and the one simulator prices every hand-off on the machine's
/// links. family "pipeline", strategy "pipeline", batch `samples`; notes "stage_nodes",
/// "stage_devices" and "stage_seconds" (each stage's seconds for one sample on its device).
/// Throws Error when `stages` is not in 2..min(devices, nodes) or `devices` names a device
/// twice or one the machine lacks.
ModelPlan stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine, int stages,
                     int samples, std::vector<int> devices = {});

/// `cleave plan --strategy pipeline --machine FILE`: plan_costs, then best_stage_plan on
/// options.machine for options.samples, the plan recording its cost source, convolution family
/// and planning time as plan_model's plans do.
CostedPlan plan_stages_with_costs(const Graph& graph, const std::string& source,
                                  const ModelPlanOptions& options,
                                  const std::function<void(const std::string&)>& progress);

/// The stage_plan of least simulated makespan over 2..min(devices, nodes, 16) stages, with the
/// devices in the machine's order and, where their speeds differ, fastest first (the slowest
/// left out when there are fewer stages than devices). Throws Error for a machine of fewer
/// than two devices or a model of fewer than two nodes.
ModelPlan best_stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine,
                          int samples);

}  // namespace cleave
