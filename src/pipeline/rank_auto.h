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

/// One plan the ranks time: the predicted choice, the runner-up of another family, the
/// spatial split, or sequential (every task on rank 0, the other ranks idle).
struct RankCandidate {
  std::string role;  ///< "choice", "runner-up", "split" or "sequential".
  std::string strategy;
  std::string configuration;
  /// The plan file's JSON (model_plan_to_json); a split's is over its partitioned graph.
  nlohmann::json plan;
  /// Null for a task plan; a split's recipe (split_recipe_json), from which every rank makes
  /// the partitioned graph `plan` runs over out of the model it loaded (candidate_graph).
  nlohmann::json split;
  /// Per rank, the predicted bytes it holds of this plan: weights plus peak activations.
  std::vector<double> memory_bytes;
  /// Per rank, what it holds beyond memory_bytes while the plan is made: the model's weights as
  /// loaded (each candidate's session loads the whole model; a split's also the partitioned
  /// graph made of it), and its own weights there as loaded beside their packed copies until
  /// its kernels are made.
  std::vector<double> load_bytes;
  /// Empty: the ranks prepare and time it. Else why rank 0 dropped it (the candidates'
  /// memory together is more than a rank has); the ranks skip it, the report lists it.
  std::string dropped;
};

/// A split is timed on the ranks when predicted within this factor of the choice's time:
/// faster, or slower by less than the predictions' usual error between families on ranks.
inline constexpr double kSplitTimedWithin = 1.25;

/// Rank 0's planning for `ranks` ranks, with the one auto of `cleave plan --machine M
/// --explain` (plan_with_costs and the split and stage rows on rank_auto_machine): the choice,
/// then, with options.check, the runner-up auto's timed check runs on threads
/// (check_runner_up) among the plans that run otherwise than the choice and than all on rank 0,
/// the spatial split where it is predicted faster than kSplitTimedWithin times the choice,
/// and the sequential plan where the choice is not it and it fits rank 0's memory. Every
/// rank holds all the candidates at once: while on some rank their predicted memory together
/// exceeds its memory (rank_memory_bytes), the candidate other than the choice that holds the
/// most there is dropped (RankCandidate::dropped says why; it is logged).
/// `graph` must be loaded whole (a profile runs it).
std::vector<RankCandidate> plan_rank_candidates(const Graph& graph, const RankAutoOptions& options,
                                                int ranks);

/// The memory of each rank, as the candidates are fitted into it: the machine's device memory
/// where it has one, else this host's available memory shared by the ranks
/// (available_memory_bytes / ranks), else unbounded.
std::vector<double> rank_memory_bytes(const Machine& machine, int ranks);

/// The graph `candidate`'s plan runs over, made on each rank from the model it loaded:
/// `model` itself for a task plan; for a split, its partitioned graph made again from the
/// recipe. Throws Error naming the candidate for a recipe that is malformed, names layers the
/// model lacks, or makes another partitioned graph than rank 0's (fingerprints differ).
Graph candidate_graph(Graph model, const RankCandidate& candidate);

/// The candidates as rank 0 sends them, and read back on every rank (Error on a text that is
/// not such a list).
std::string rank_candidates_text(const std::vector<RankCandidate>& candidates);
std::vector<RankCandidate> rank_candidates_from_text(const std::string& text);

}  // namespace cleave
