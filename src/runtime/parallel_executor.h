// Runs a Plan for real: one pinned thread per plan worker, values passed by reference.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"

namespace cleave {

struct ParallelOptions {
  int threads_per_worker = 1;    ///< Intra-op threads of each worker (the paper's "downstream").
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
};

/// What one run really did: per task its worker, start and end, and how long the worker
/// waited for inputs before it (the Ramiel paper's "slack"), all in seconds from run start.
struct Trace {
  struct Event {
    int task = -1;
    int worker = -1;
    double start = 0;
    double end = 0;
    double wait = 0;
  };
  std::vector<Event> events;  ///< Per task id.
  double makespan = 0;
};

/// Executes a plan whose tasks are graph nodes (Task::node), or nodes applied to one sample
/// each (Task::batch_begin = sample index) for hyperclustered plans of several samples.
///
/// Each plan worker is a thread running its task order (a one-worker plan runs on the caller's
/// thread, sharing its OpenMP pool); a value crossing workers is handed over as a
/// reference-counted buffer plus a ready flag, never copied. Each worker allocates its outputs
/// from its own buffer pool. A kernel error or a
/// timeout stops every worker and run() throws an Error naming the task and node.
class ParallelExecutor {
 public:
  /// Validates the plan against the task graph and the graph (every node covered once per
  /// sample, orders consistent with dependences); refuses an invalid plan with the reason.
  ParallelExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan,
                   ParallelOptions options = {});
  ~ParallelExecutor();

  /// Runs all samples; `inputs[s]` holds sample s's graph inputs by name. Returns per sample
  /// the graph outputs (plain) in order.
  std::vector<std::vector<Tensor>> run(const std::vector<std::map<std::string, Tensor>>& inputs);
  /// Batch-1 convenience.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

  const Trace& last_trace() const { return trace_; }
  int samples() const { return samples_; }
  /// Values written straight into a Concat's output (from the second run on).
  int concat_inputs_in_place() const;
  std::size_t peak_activation_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Trace trace_;
  int samples_ = 1;
};

/// Chrome trace-event JSON (chrome://tracing, Perfetto) of a trace.
std::string chrome_trace_json(const Trace& trace, const TaskGraph& tasks, const Plan& plan);
/// The measured timeline as a Plan (start/finish from the trace), for the Gantt chart.
Plan measured_plan(const Plan& plan, const Trace& trace);
/// The trace in the simulator's terms (per-task times, per-worker busy/idle), for charts and
/// for comparing predicted with measured timelines.
Simulation simulation_from_trace(const Trace& trace, const Plan& plan);

}  // namespace cleave
