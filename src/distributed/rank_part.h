// One rank's part of a plan file's run: the plan the ranks agree on, its weights, its executor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "distributed/mpi_session.h"
#include "distributed/rank_sync.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "onnx/onnx_import.h"
#include "runtime/executor.h"
#include "runtime/executor_interface.h"
#include "runtime/trace.h"

namespace cleave {

/// How a rank runs its part of a plan.
struct RankPartOptions {
  int threads = 1;  ///< Intra-op threads asked for.
  /// Keep `threads` whatever the load; else the ranks of a host share the cores other processes
  /// leave free (choose_rank_threads).
  bool fixed_threads = false;
  double rank_timeout_seconds = 60;
  bool blocked_layouts = true;
  bool release_packed_weights = true;  ///< MpiOptions::release_packed_weights.
  /// A caller's check of the graph as loaded, before the plan is read; may be empty.
  std::function<void(const Graph&)> loaded;
  /// The plan itself (as rank 0 sent it: `--plan auto`), read instead of the plan file, whose
  /// name then only names it in errors; null: read the file.
  nlohmann::json plan_json;
};

/// What only ranks need of a plan run, for a Session's prepare to call
/// (RunRecipe::plan_runner): reading the plan once and hashing it with every weight (those
/// import left unread hashed from the file), reading only this rank's weights, the rank's
/// thread count, and the MPI executor of its tasks.
class RankPart {
 public:
  RankPart(RankPartOptions options, const MpiSession& mpi);

  /// Where import leaves a model's weights unread (loaded as is), for LoadOptions.
  std::map<std::string, ExternalWeight>* unread_weights() { return &unread_; }
  /// The plan of `plan_file` (or options.plan_json) for `graph`, read once. Throws Error naming the
  /// file for a plan of another model or of a worker count other than the ranks.
  ModelPlan read_plan(const Graph& graph, const std::string& plan_file);
  /// Reads this rank's unread weights, drops the others, fits its threads, and makes the MPI
  /// executor of its tasks in `family`.
  std::unique_ptr<ExecutorInterface> make_executor(Graph& graph, const ModelPlan& plan,
                                                   ConvolutionFamily family);

  /// What every rank must agree on before any work: the plan read and the model's weights.
  uint64_t plan_hash() const { return hash_; }
  double model_weight_bytes() const { return model_weight_bytes_; }
  /// Whether some weights were never read whole (loaded as is).
  bool weights_left_unread() const { return !unread_.empty(); }
  /// Intra-op threads this rank runs with, and why; set by make_executor.
  const RankThreads& threads() const { return threads_; }

 private:
  RankPartOptions options_;
  const MpiSession& mpi_;
  std::map<std::string, ExternalWeight> unread_;
  uint64_t hash_ = 0;
  double model_weight_bytes_ = 0;
  RankThreads threads_;
};

/// Per rank, what to add to its trace times to put them on one clock: rank r's times count from
/// `origins[r]` (seconds of its own steady clock), which is `offsets[r]` seconds ahead of rank
/// 0's (clock_offsets); on the one clock, times count from the earliest rank's origin.
std::vector<double> one_clock_shifts(const std::vector<double>& origins,
                                     const std::vector<double>& offsets);

/// Rank 0 gets every rank's trace events (task, worker, start, end, wait) on one clock; others
/// get none. `origin`: seconds of this rank's steady clock at the traced run's start (its
/// events count from it); every rank's times are moved by one_clock_shifts, the offsets of its
/// clock measured by clock_offsets, so that a wait on one rank lines up with the other rank's
/// task it waited for.
std::vector<Trace::Event> gather_trace_events(const MpiSession& mpi, const Trace& trace,
                                              double origin, double timeout_seconds);

}  // namespace cleave
