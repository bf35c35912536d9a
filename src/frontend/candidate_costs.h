// What each candidate of `auto`'s table was predicted with: node costs, threads, links.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"

namespace cleave {

/// What `plan` (simulated on its task graph, which `costs` priced) was predicted with: the
/// node times (busy-core where its workers compute at once: prices_beside_busy), the threads
/// of each worker that computes, the profile's convolution family, and the links its hand-offs
/// were priced on (`machine_file`: its devices are a machine file's, else this host's workers).
CandidateCosts describe_costs(const CostTable& costs, const ModelPlan& plan, bool machine_file);

/// The pipelined stages on this host's cores: `stages` workers of `threads` each, every node at
/// its busy-core time (all stages compute at once), hand-offs not priced (pipeline_seconds).
CandidateCosts stage_costs(const CostTable& costs, int stages, int threads);

/// One line: "profile in context, 2 threads; convolutions blocked; links none".
std::string costs_text(const CandidateCosts& costs);

/// {source, threads (the most of any worker), conv_family (null: none), links}, and
/// threads_by_worker where workers differ; null for a row never predicted.
nlohmann::json costs_to_json(const CandidateCosts& costs);

}  // namespace cleave
