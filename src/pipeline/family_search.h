// `auto`'s whole candidate table: plan_model's families, then the spatial split and the
// pipelined stages, which are planned above the frontend (spatial, stream).
#pragma once

#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"

namespace cleave {

/// Adds to `plan.candidates` the spatial search's best split (a machine file of more than one
/// device; spatial_run.h) and the pipelined stages (several samples) on the same resources,
/// each predicted and, where faster than the plan, listed with the command that runs it (a
/// split: `cleave run --plan auto --machine FILE`; stages: `cleave run --plan pipeline`; auto
/// runs either where it is faster); a spatial or pipeline row already in the table (added by
/// prepare_run's auto or the family bench) is kept as it is. The time spent is added to
/// plan.planning_seconds.
void add_split_and_stage_candidates(const Graph& graph, const CostTable& costs,
                                    const ModelPlanOptions& options, ModelPlan& plan);

/// The pipelined stages' row (several samples): the count of stages on the options' cores
/// (each stage cores / stages threads; configuration as pipeline_configuration names it,
/// predicted by pipeline_seconds: hand-offs not priced) or, on a machine file's devices, the
/// fastest stage_plan (a stage per device balanced at each device's speed, predicted by the
/// one simulator with every hand-off priced; frontend/stage_plan.h, which plan_auto lists
/// itself); with each stage worker's weights and peak activations. `rejected` says why where no
/// stages could be made.
PlanCandidate pipeline_candidate(const Graph& graph, const CostTable& costs,
                                 const ModelPlanOptions& options);

/// The planning time and, where a budget cut a row's search short, which families and how:
/// "812.40 ms; cut short by a budget: spatial (8 of 64 devices searched)".
std::string planning_time_text(const ModelPlan& plan);

/// The candidate table `cleave plan --explain` prints: per row the family, configuration,
/// predicted latency (and throughput for several samples), weights per device, and the
/// chosen mark or why it was rejected.
std::string candidate_table_text(const ModelPlan& plan);

}  // namespace cleave
