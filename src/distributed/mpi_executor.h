// Runs a Plan across MPI ranks: rank w runs worker w's tasks; values crossing ranks are messages.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/rank_weights.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/task_graph.h"
#include "runtime/executor_interface.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

struct MpiOptions {
  int threads = 1;                   ///< Intra-op threads of this rank.
  bool blocked_layouts = true;       ///< As ExecutorOptions::blocked_layouts.
  double rank_timeout_seconds = 60;  ///< Longest wait for one message before all ranks stop.
  ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked;
  /// Runs of a stream a rank may start before the sends (and, on rank 0, the output
  /// receives) of an earlier run have completed: the depth of the pipeline across ranks.
  int window = 2;
  /// Frees each weight once every kernel of this rank that reads it has packed a copy of its
  /// own (in the first run), so the rank does not hold its weights twice. Only where the
  /// reading nodes' input shapes are static (no kernel is prepared again).
  bool release_packed_weights = true;
};

/// What this rank did in the last call of run().
struct RankReport {
  int tasks = 0;                     ///< Tasks per run.
  double weight_bytes = 0;           ///< Initializer bytes this rank loaded (its tasks' only).
  double released_weight_bytes = 0;  ///< Of those, freed once the kernels had packed them.
  double bytes_sent = 0;             ///< Message bytes, headers included, over the whole stream.
  double bytes_received = 0;
  int64_t messages_sent = 0;
  int64_t messages_received = 0;
  std::size_t peak_activation_bytes = 0;
};

/// Executes this rank's part of a plan (ExecutorInterface). Every rank constructs one with the
/// same graph, task graph and plan; the plan must have one worker per rank of `comm`. Values
/// that cross ranks go through an MpiHandOff (distributed/mpi_hand_off.h): one checked message
/// each, sent as soon as it is produced, received only when a task needs it, each wait bounded
/// by `rank_timeout_seconds`.
///
/// A call of run() takes any multiple of samples() samples and runs the plan that many times
/// back to back, pipelined across ranks (up to MpiOptions::window runs in flight). Every rank
/// calls it with the same number of samples; rank 0 passes the inputs and gets the outputs,
/// the others pass empty SampleInputs (rank 0 sends the graph inputs they read) and get empty
/// output lists. Errors are Error, or RankTimeout (mpi_session.h) naming the value, the rank
/// waited on and the task that needed it; after one, the job should end (abort_ranks).
/// last_trace() holds every task event of the last call (one per task and plan run).
class MpiExecutor : public ExecutorInterface {
 public:
  MpiExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan, MPI_Comm comm,
              MpiOptions options = {});
  ~MpiExecutor() override;

  /// Plan samples per run (hyperclustered plans run several samples per run).
  int samples() const override;
  std::vector<std::vector<Tensor>> run(const std::vector<SampleInputs>& inputs) override;
  std::vector<Tensor> run(const SampleInputs& inputs) override;
  const RunStats& stats() const override { return stats_; }
  void reset_stats() override;
  const Trace& last_trace() const override { return trace_; }

  const RankReport& report() const { return report_; }
  /// Rank 0: per sample of the last call, seconds from the start of its run until rank 0 held
  /// all its outputs (observed between tasks, so late by at most one task of rank 0).
  const std::vector<double>& sample_seconds() const { return sample_seconds_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  RankReport report_;
  RunStats stats_;
  Trace trace_;
  std::vector<double> sample_seconds_;
};

}  // namespace cleave
