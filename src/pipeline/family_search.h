// `auto`'s whole candidate table: plan_model's families, then the spatial split and the
// pipelined stages, which are planned above the frontend (spatial, stream).
#pragma once

#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"

namespace cleave {

/// Adds to `plan.candidates` the spatial search's best split (a machine file of more than one
/// device) and the pipelined stages (several samples) on the same resources, each predicted
/// and listed with the command that runs it: `plan` and `run` cannot run them, so they are
/// never the chosen plan, but they are never dropped from the table either. The time spent is
/// added to plan.planning_seconds.
void add_split_and_stage_candidates(const Graph& graph, const CostTable& costs,
                                    const ModelPlanOptions& options, ModelPlan& plan);

/// The candidate table `cleave plan --explain` prints: per row the family, configuration,
/// predicted latency (and throughput for several samples), weights per device, and the
/// chosen mark or why it was rejected.
std::string candidate_table_text(const ModelPlan& plan);

}  // namespace cleave
