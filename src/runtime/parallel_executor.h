// The thread executor: runs a Plan with one pinned thread per plan worker.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/task_graph.h"
#include "runtime/executor.h"
#include "runtime/executor_interface.h"
#include "runtime/tensor.h"
#include "runtime/trace.h"

namespace cleave {

struct ParallelOptions {
  int threads_per_worker = 1;  ///< Intra-op threads of each worker (the paper's "downstream").
  /// Threads that run the workers: 0 (or at least the workers) gives each worker its own.
  /// Fewer fold the workers onto them, worker w on thread w % threads, each thread running
  /// its workers' tasks in one order that follows the edges and every worker's order
  /// (execution_order), so that no thread waits on a task queued behind it. Folded threads are
  /// not pinned. This is how a plan runs when other processes hold some of the cores
  /// (plan_threads_for, runtime/wait_policy.h).
  int threads = 0;
  bool pin_threads = true;       ///< Bind worker w to its cores (Device::cores, else core w).
  bool blocked_layouts = true;   ///< As ExecutorOptions::blocked_layouts.
  double timeout_seconds = 300;  ///< A worker waiting longer for an input stops the run.
  bool in_place_concat = true;   ///< As ExecutorOptions::in_place_concat.
  /// As ExecutorOptions::convolution_family.
  ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked;
  /// A buffer that another worker reads is not rewritten by its owner until the owner's pool
  /// has handed out this many more bytes, so that the reader's cache has let go of its lines;
  /// -1: the size of a core's L2 cache (hwloc; 1 MiB when unknown); 0: reuse at once.
  int64_t remote_read_hold_back_bytes = -1;
  /// As ExecutorOptions::release_packed_weights: an initializer's loaded bytes go once every
  /// task that reads it has a kernel keeping a packed copy of its own.
  bool release_packed_weights = false;
};

/// Executes a plan whose tasks are graph nodes (Task::node), or nodes applied to one sample
/// each (Task::batch_begin = sample index) for hyperclustered plans of several samples.
///
/// Each plan worker is a thread running its task order, worker 0 the caller's (sharing its
/// OpenMP pool; all of a one-worker plan runs there); a value crossing workers is handed over
/// through a ValueHandOff (in this process: a reference-counted buffer plus a ready flag, never
/// copied). Each worker allocates its outputs from its own buffer pool. A kernel error or a timeout
/// stops every worker and run() throws an Error naming the task and node.
class ParallelExecutor : public ExecutorInterface {
 public:
  /// Validates the plan against the task graph and the graph (every node covered once per
  /// sample, orders consistent with dependences); refuses an invalid plan with the reason.
  ParallelExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan,
                   ParallelOptions options = {});
  ~ParallelExecutor() override;

  /// Runs all samples; `inputs[s]` holds sample s's graph inputs by name. Returns per sample
  /// the graph outputs (plain) in order.
  std::vector<std::vector<Tensor>> run(const std::vector<SampleInputs>& inputs) override;
  /// Batch-1 convenience.
  std::vector<Tensor> run(const SampleInputs& inputs) override;

  const Trace& last_trace() const override { return trace_.trace(); }
  int samples() const override { return samples_; }
  /// Node times come from the trace (per task, summed over samples and runs).
  const RunStats& stats() const override { return stats_; }
  void reset_stats() override;
  /// Joins the worker threads (their OpenMP teams end with them); the next run starts them
  /// again. Kernels, packed weights and buffers stay.
  void end_threads();
  /// Threads running the workers (ParallelOptions::threads, at most the workers).
  int threads() const;
  /// Intra-op threads of each worker (ParallelOptions::threads_per_worker).
  int threads_per_worker() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TraceRecorder trace_;
  RunStats stats_;
  int samples_ = 1;
};

}  // namespace cleave
