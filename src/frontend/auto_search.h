// `auto`'s candidate space below spatial and stream: sequential, task, hybrid, heterogeneous
// and data-parallel plans and a machine's stages, each simulated, the fastest that fits kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"

namespace cleave {

/// One worker (all cores intra-op, or a machine file's first device) running every node.
ModelPlan plan_sequential(const Graph& graph, const CostTable& costs,
                          const ModelPlanOptions& options);

/// The registered planner `strategy` on the options' workers x threads, or their machine;
/// `clone_trials` bounds cloning's search (ScheduleOptions::clone_trials; -1: no bound).
ModelPlan plan_with_planner(const Graph& graph, const CostTable& costs,
                            const ModelPlanOptions& options, const std::string& strategy,
                            int64_t clone_trials = -1);

/// Each worker its own whole samples (sample s on worker s mod workers), nodes in order; the
/// model's inputs and outputs travel as `values` says (kFromRank0 for a machine file's ranks).
ModelPlan plan_data_parallel(const Graph& graph, const CostTable& costs, const Machine& machine,
                             int samples, ModelValues values = ModelValues::kShared);

/// `auto`: every candidate of every family plan_model can plan, simulated; the fastest whose
/// weights fit is returned with the whole table (ModelPlan::candidates). On a machine file's
/// devices a stream of several samples also gets pipelined stages (best_stage_plan), unless
/// each node must run once. Without a machine
/// file the resources are workers x threads_per_worker cores, split every way (w >= 2 workers
/// of cores / w threads), and hybrid plans give a clustering's workers unequal threads by
/// their clusters' weight. Throws Error when no candidate fits the machine's memory.
ModelPlan plan_auto(const Graph& graph, const CostTable& costs, const ModelPlanOptions& options);

/// The family of a strategy name: sequential, task, heterogeneous, data-parallel or pipeline.
std::string family_of(const std::string& strategy);

/// Marks the row of `chosen_configuration` chosen and, on every other row not rejected yet,
/// why it lost ("slower than ..."): the table a user reads beside the chosen plan.
void mark_candidates(std::vector<PlanCandidate>& rows, const std::string& chosen_configuration);

}  // namespace cleave
