// The contract every executor keeps: graph inputs in, graph outputs out, samples, statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"
#include "runtime/trace.h"

namespace cleave {

/// One sample's graph inputs, by graph input name.
using SampleInputs = std::map<std::string, Tensor>;

/// Everything an executor's runs measure: node times and runs are summed over the runs since
/// the last reset_stats(); the rest describes the executor as it stands after its last run.
struct RunStats {
  std::size_t peak_activation_bytes = 0;  ///< Bytes the buffer pool(s) reserved.
  /// Buffers of values shaped at run time (BufferPool::acquire_run_time) over the executor's
  /// life: allocated, and handed out again after an earlier value returned them.
  int64_t run_time_buffers_made = 0;
  int64_t run_time_buffers_reused = 0;
  int concat_inputs_in_place = 0;  ///< Values written inside a Concat's output.
  /// Per NodeId, summed over runs (and over samples); zeros where the executor does not time
  /// nodes (the sequential executor without ExecutorOptions::collect_stats).
  std::vector<double> node_seconds;
  int64_t runs = 0;
  /// Per NodeId, Kernel::implementation of the kernel that ran it ("jit:avx2", "ref:any"; ""
  /// for kernels of cleave's own and nodes this executor does not run), as of the last run.
  std::vector<std::string> implementations;
  int tasks = 0;                          ///< Tasks this executor (this rank) runs per run.
  std::size_t weight_bytes = 0;           ///< Initializer bytes it holds (a rank: its tasks').
  std::size_t released_weight_bytes = 0;  ///< Of those, freed once kernels packed their own.
  /// Values crossing ranks (the MPI executor's last call of run(), message headers included).
  double bytes_sent = 0;
  double bytes_received = 0;
  int64_t messages_sent = 0;
  int64_t messages_received = 0;
  /// Per run of the MPI executor's last call of run(), of the values received: those received
  /// straight into a Concat's output, and the bytes of those a Concat copied into its output.
  double values_received_in_place = 0;
  double received_bytes_copied = 0;
  /// Rank 0 of the MPI executor: per sample of the last call, seconds from the start of its
  /// run until rank 0 held all its outputs.
  std::vector<double> sample_seconds;
  /// The MPI executor under CLEAVE_EMULATED_SPEEDS (distributed/emulated_speed.h): the speed
  /// this rank emulates, and the seconds it paused for it over the runs counted in `runs`.
  double emulated_speed = 1.0;
  double emulated_pause_seconds = 0.0;
};

/// An executor runs one model: the sequential executor (runtime/executor.h), the thread
/// executor of a plan (runtime/parallel_executor.h), and later the MPI executor and
/// generated code. A caller that only needs outputs, latency and statistics holds this.
///
/// Contract: a run takes the inputs of `samples()` samples (the sequential executor takes any
/// number and runs them in turn), checks them against the graph's inputs (check_inputs),
/// and returns per sample the graph outputs in graph order, plain (row-major) and owned or
/// shared, never a view into a buffer the next run rewrites. Errors are cleave::Error naming
/// the input, task or node; after an error the executor can run again. Observers added with
/// add_observer() see every run (ExecutorObserver's calls, in its threading rules).
class ExecutorInterface {
 public:
  virtual ~ExecutorInterface() = default;

  /// Samples one run takes (a hyperclustered plan: its batch; the sequential executor: 1).
  virtual int samples() const = 0;
  /// Runs once over a batch: `inputs[s]` is sample s. Returns per sample the graph outputs.
  virtual std::vector<std::vector<Tensor>> run(const std::vector<SampleInputs>& inputs) = 0;
  /// Runs one sample (an executor whose runs take several samples refuses it).
  virtual std::vector<Tensor> run(const SampleInputs& inputs) = 0;

  virtual const RunStats& stats() const = 0;
  /// Forgets node times and the run count (e.g. after warm-up runs that prepared kernels).
  virtual void reset_stats() = 0;
  /// The last run's timeline; empty for an executor that keeps none (the sequential one
  /// without collect_stats).
  virtual const Trace& last_trace() const = 0;

  /// Calls `observer` on every later run. Not while a run is under way.
  void add_observer(std::shared_ptr<ExecutorObserver> observer) {
    observers_.push_back(std::move(observer));
  }

 protected:
  std::vector<std::shared_ptr<ExecutorObserver>> observers_;
};

/// Checks the caller's inputs against the graph's declared inputs (names, types, ranks and
/// known dims); throws Error naming the input and what was expected.
void check_inputs(const Graph& graph, const SampleInputs& inputs);

}  // namespace cleave
