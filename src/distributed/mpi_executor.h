// Runs a Plan across MPI ranks: rank w runs worker w's tasks; values crossing ranks are messages.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/task_graph.h"
#include "runtime/kernel.h"
#include "runtime/parallel_executor.h"
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
};

/// What this rank did in the last stream.
struct RankReport {
  int tasks = 0;            ///< Tasks per run.
  double weight_bytes = 0;  ///< Initializer bytes this rank keeps (its tasks' only).
  double bytes_sent = 0;    ///< Message bytes, headers included, over the whole stream.
  double bytes_received = 0;
  int64_t messages_sent = 0;
  int64_t messages_received = 0;
  std::size_t peak_activation_bytes = 0;
};

/// Results of a stream, complete on rank 0 only.
struct StreamResult {
  std::vector<std::vector<Tensor>> outputs;  ///< Per sample, the graph outputs in order (plain).
  /// Per sample, seconds from the start of its run on rank 0 until rank 0 held all its outputs
  /// (observed between tasks, so late by at most one task of rank 0).
  std::vector<double> sample_seconds;
  double seconds = 0;  ///< The whole stream on this rank.
};

/// The initializers the tasks of `worker` read, for keep_weights_of.
std::vector<ValueId> initializers_of_worker(const Graph& graph, const TaskGraph& tasks,
                                            const Plan& plan, int worker);
/// Drops the bytes of every initializer that no task of `worker` reads (rank 0 also keeps the
/// ones that are graph outputs); returns the bytes kept.
double keep_weights_of(Graph& graph, const TaskGraph& tasks, const Plan& plan, int worker);

/// Executes this rank's part of a plan. Every rank constructs one with the same graph, task
/// graph and plan; the plan must have one worker per rank of `comm`. Values that cross ranks
/// travel as one message each (header + plain bytes), sent with MPI_Isend as soon as they are
/// produced; every receive of a run is posted with MPI_Irecv when the run starts and waited
/// for only when a task needs it, each wait bounded by `rank_timeout_seconds`. A message is
/// checked against the plan (channel, run, type, shape, size) before it is used.
class MpiExecutor {
 public:
  MpiExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan, MPI_Comm comm,
              MpiOptions options = {});
  ~MpiExecutor();

  /// Plan samples per run (hyperclustered plans run several samples per run).
  int samples_per_run() const;
  /// Runs `runs` runs of the plan back to back, pipelined across ranks. On rank 0, `inputs`
  /// holds runs × samples_per_run() samples (graph inputs by name); other ranks pass none.
  /// Throws Error or RankTimeout (mpi_session.h) naming the task, value and rank waited on.
  StreamResult run(const std::vector<std::map<std::string, Tensor>>& inputs, int runs);

  const RankReport& report() const { return report_; }
  /// This rank's task events of the last stream (worker = rank; one per task and run).
  const Trace& last_trace() const { return trace_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  RankReport report_;
  Trace trace_;
};

}  // namespace cleave
