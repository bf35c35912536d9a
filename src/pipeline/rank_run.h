// `cleave run --plan` under mpirun: every rank loads, agrees, runs its part; rank 0 reports.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pipeline/plan_and_run.h"
#include "pipeline/rank_auto.h"
#include "runtime/tensor.h"

namespace cleave {

struct RankRunSettings {
  std::string model;
  /// A plan file whose worker count equals the ranks started, or "auto": rank 0 plans with
  /// `auto_plan`, sends the candidates to every rank, and the ranks time them alike.
  std::string plan;
  RankAutoOptions auto_plan;  ///< With plan "auto" (its threads and samples are set from here).
  std::vector<std::string> shapes;
  bool optimize = true;
  /// With `optimize` off: put back cleave's fused forms (LoadOptions::fuse_exported_forms).
  bool fuse_exported_forms = false;
  bool plain_layouts = false;
  std::string layouts = "auto";  ///< auto means blocked here: no rank measures on its own.
  int threads = 1;               ///< Intra-op threads per rank asked for.
  /// Keep `threads` whatever the load; else the ranks of a host share the cores other processes
  /// leave free (rank_threads_for, runtime/wait_policy.h).
  bool fixed_threads = false;
  int warmup = 0;
  int repeat = 1;
  int samples = 1;  ///< Inputs pushed through the ranks per repeat (a pipelined stream).
  bool json = false;
  std::string output_dir;
  std::vector<std::string> files_read;  ///< Model, plan, input files: no output replaces them.
  std::string trace_file;
  double rank_timeout_seconds = 60;
  /// Every rank reads the whole model (else, loaded as is, only its own tasks' weights).
  bool read_whole_model = false;
  /// Keep the loaded weights after the kernels packed them (MpiOptions::release_packed_weights).
  bool keep_loaded_weights = false;
  /// Rank 0's inputs of stream sample `sample` (--input files, else seeded random values).
  std::function<std::map<std::string, Tensor>(const Graph&, int sample)> inputs;
  /// A caller's own checks, run on every rank before it agrees to start, so that a refusal
  /// stops every rank before any work (run-split: its manifest against the ranks, --model and
  /// the partitioned graph): `before_load` with the ranks started, `loaded` with the graph as
  /// loaded, before the plan is read. Either may be empty.
  std::function<void(int ranks)> before_load;
  std::function<void(const Graph&)> loaded;
  /// Rank 0's lines of what loading and preparing decided (`--verbose`); may be empty.
  std::function<void(const std::string&)> log;
};

/// What a run on ranks leaves on rank 0 for its command to print.
struct RankRunResult {
  int exit_code = 0;
  bool reported = false;  ///< True on rank 0 of a run that ran: the fields below are set.
  /// As `mpirun cleave run --json` prints it, outputs (written by now) and trace file included.
  nlohmann::json report;
  /// rank_threads_line when rank 0 runs fewer intra-op threads than asked; else empty.
  std::string threads_line;
  /// `--plan auto`'s timed check, when it ran: on rank 0, the times that decided.
  std::optional<AutoCheck> auto_check;
};

/// The longest the other ranks wait for rank 0's `--plan auto` planning (a profile and the
/// planners' searches), beyond the rank timeout.
inline constexpr double kRankPlanningSeconds = 600;

/// Runs the plan on the ranks of MPI_COMM_WORLD (initializing and finalizing MPI): the one
/// driver of a plan on ranks, each rank's model held by a Session whose prepare makes its part
/// of the plan (RankPart, distributed/rank_part.h) on the MPI executor, for `mpirun cleave run
/// --plan` and `mpirun cleave run-split`. A plan made for another model, a worker count other than
/// the ranks, a refusal of a caller's check or any rank failing to load is refused on every rank
/// before any work starts (exit code 1). A rank that fails or times out while running stops the
/// whole job (MPI_Abort) with a message naming the rank and what it waited for. Rank 0 writes the
/// outputs (atomically, after the last run) and the trace, and gets the report.
///
/// With plan "auto", rank 0 loads the model whole and plans (plan_rank_candidates; a refusal,
/// such as a machine file of another device count, stops every rank before any work), sends
/// the candidate plans to every rank (broadcast_text), and each rank prepares each of them as
/// it would a plan file; then, unless the check is off, the ranks run them alike, interleaved
/// (time_alike's blocks, each run started together), and keep the fastest of rank 0's medians
/// (fastest_measured: the prediction on a tie) for the warm-up and timed runs. The report's
/// plan then has "auto_check" (auto_check_json) and the candidate table.
RankRunResult run_plan_on_ranks(const RankRunSettings& settings);

/// `mpirun cleave run --plan`: run_plan_on_ranks, then rank 0 prints the report (as JSON with
/// `json`). Returns the exit code.
int run_on_ranks(const RankRunSettings& settings);

}  // namespace cleave
