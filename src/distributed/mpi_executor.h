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
/// last_trace() holds every task event of the last call (one per task and plan run). stats()
/// holds this rank's figures: tasks, weights loaded and released, the last call's traffic and,
/// on rank 0, its per-sample seconds (observed between tasks, so late by at most one task).
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  RunStats stats_;
  Trace trace_;
};

}  // namespace cleave
