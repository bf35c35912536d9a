// A model cut into contiguous stages, run as a pipeline over a stream of samples behind
// ExecutorInterface.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/executor_interface.h"
#include "stream/executor.h"
#include "stream/stages.h"
#include "stream/stream_planner.h"

namespace cleave {

/// How a model is cut and where its stages run.
struct StageExecutorOptions {
  int stages = 1;   ///< Contiguous stages of the topological order (1..nodes).
  int workers = 1;  ///< Stage k runs on worker k mod workers.
  int samples = 1;  ///< Samples one run pushes through the pipeline.
  /// Per NodeId, seconds the cut balances (a cost table's seconds); empty: FLOPs.
  std::vector<double> node_cost;
  /// The options of each stage's sequential executor (threads, convolution family, layouts).
  ExecutorOptions stage_options;
  /// Names the cause of a bad `stages` count in errors (a command's option, e.g. "--workers").
  std::string stages_option = "stages";
  std::string samples_option = "samples";  ///< The same for `samples`.
};

/// Error naming `options.stages_option` when the stages are not in 1..nodes of `graph`, or
/// the workers or samples are below 1 (what StageExecutor's constructor checks first).
void check_stage_options(const Graph& graph, const StageExecutorOptions& options);

/// The pipelined stages of `graph` (graph_to_stages) executed by execute_stream: one run feeds
/// each sample's graph inputs as items, stage k fires on worker k mod workers as soon as an
/// item reaches it, so successive samples occupy successive stages at once. Each stage keeps
/// one executor across runs (kernels prepared once). A task is a stage: the trace holds one
/// event per firing (samples() per stage), replayed to observers after the stream finished.
class StageExecutor : public ExecutorInterface {
 public:
  /// Error naming `options.stages_option` when the stages are not in 1..nodes, or the workers
  /// or samples are below 1.
  StageExecutor(const Graph& graph, const StageExecutorOptions& options);

  int samples() const override { return samples_; }
  /// Runs `inputs.size()` samples (samples() is what a run is planned for, but any number
  /// of at least one streams through); per sample the graph outputs in graph order, owned.
  std::vector<std::vector<Tensor>> run(const std::vector<SampleInputs>& inputs) override;
  /// One sample through the pipeline.
  std::vector<Tensor> run(const SampleInputs& inputs) override;
  const RunStats& stats() const override { return stats_; }
  void reset_stats() override;
  const Trace& last_trace() const override { return trace_; }

  /// Places the stages on `options.workers` workers by the stream planner (plan_stream: its
  /// `method`, `firing_seconds`, empty to measure each stage's firing) instead of stage k on
  /// worker k mod workers, and runs with its `capacity_factor`. Call before a run.
  void place(const StreamRunOptions& options);

  int stages() const { return static_cast<int>(staged_.root.streams.size()); }
  int workers() const { return plan_.workers; }
  /// Intra-op threads of each stage's kernels (StageExecutorOptions::stage_options.threads).
  int threads() const { return threads_; }
  /// The cut: nodes, FLOPs and balanced seconds per stage.
  const StagedStream& staged() const { return staged_; }
  /// The program the stages run (one model filter per stage).
  const StreamProgram& program() const { return program_; }
  /// What the stream executor measured in the last run: throughput, latencies, workers'
  /// evidence, placement and every output item.
  const StreamRunResult& last_result() const { return last_; }
  /// "stage0", "stage1", ...: Trace::Event::task names, for ChromeTrace.
  std::vector<std::string> task_names() const;
  /// "worker 0", ...: Trace::Event::worker names.
  std::vector<std::string> worker_names() const;

 private:
  Graph graph_;
  StagedStream staged_;
  StreamProgram program_;
  StreamPlan plan_;
  int64_t capacity_factor_ = StreamRunOptions{}.capacity_factor;
  StreamRunResult last_;
  int samples_ = 1;
  int threads_ = 1;
  RunStats stats_;
  Trace trace_;
};

}  // namespace cleave
