// `mpirun cleave run --plan auto`: rank 0's candidate plans, which every rank then times alike.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "machine/machine.h"

namespace cleave {

/// How rank 0 plans `--plan auto` for the ranks started.
struct RankAutoOptions {
  /// A machine file of one device per rank; empty: the ranks as equal devices of this host's
  /// kind (ranks_without_machine_file, as generated rank programs are planned).
  std::string machine;
  std::string costs = "profile";  ///< profile, static or analytical.
  int threads_per_worker = 1;     ///< Each rank's intra-op threads, without a machine file.
  int samples = 1;                ///< Samples one run pushes through the plan.
  /// False: only the predicted choice (`--no-auto-check`).
  bool check = true;
  std::function<void(const std::string&)> log;  ///< One line per decision; may be empty.
};

/// The machine auto plans the ranks on: the machine file, which must name one device per rank
/// (Error naming the file and both counts), else ranks_without_machine_file.
Machine rank_auto_machine(const RankAutoOptions& options, int ranks);

/// One plan the ranks time: the predicted choice, the runner-up of another family, or
/// sequential (every task on rank 0, the other ranks idle).
struct RankCandidate {
  std::string role;  ///< "choice", "runner-up" or "sequential".
  std::string strategy;
  std::string configuration;
  nlohmann::json plan;  ///< The plan file's JSON (model_plan_to_json).
};

/// Rank 0's planning for `ranks` ranks, with the one auto of `cleave plan --machine M
/// --explain` (plan_with_costs and the split and stage rows on rank_auto_machine): the choice,
/// then, with options.check, the runner-up auto's timed check runs on threads
/// (check_runner_up) among the plans that run otherwise than the choice and than all on rank 0,
/// and the sequential plan where the choice is not it and it fits rank 0's
/// memory. Only task plans: a spatial split predicted faster is logged, not run (spatial
/// splits are not timed on ranks).
/// `graph` must be loaded whole (a profile runs it).
std::vector<RankCandidate> plan_rank_candidates(const Graph& graph, const RankAutoOptions& options,
                                                int ranks);

/// The candidates as rank 0 sends them, and read back on every rank (Error on a text that is
/// not such a list).
std::string rank_candidates_text(const std::vector<RankCandidate>& candidates);
std::vector<RankCandidate> rank_candidates_from_text(const std::string& text);

}  // namespace cleave
