// The per-worker task loop every executor runs: gather inputs, run the node, hand off, free.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "runtime/buffer_pool.h"
#include "runtime/claim_pool.h"
#include "runtime/concat_placement.h"
#include "runtime/executor_interface.h"
#include "runtime/layout_hand_off.h"
#include "runtime/node_runner.h"
#include "runtime/output_placement.h"
#include "runtime/task_input.h"
#include "runtime/tensor.h"
#include "runtime/trace.h"
#include "runtime/value_hand_off.h"

namespace cleave {

/// One task as the loop runs it: its node, where its inputs come from, the values it made.
struct LoopTask {
  NodeId node = -1;
  int sample = 0;
  int worker = 0;                      ///< The plan worker (Trace::Event::worker).
  std::vector<TaskInput> sources;      ///< Per input of the node.
  std::unique_ptr<NodeRunner> runner;  ///< Null for a task another rank runs.
  std::vector<Tensor> outputs;         ///< Of the current run.
  std::vector<int> uses;               ///< Per output: reads that free it here, each run.
  std::vector<char> keep;              ///< Per output: kept past its last read (returned).
  std::vector<char> read_remotely;     ///< Per output: read on another core (hold-back).
  /// Per output: reads left in this run; null for a value the hand-off holds (another rank's).
  std::unique_ptr<std::atomic<int>[]> remaining;
  bool weights_checked = false;  ///< Whether its kernel's packing was looked at.
};

/// What every worker of one executor shares: the tasks and their values, the constants, and
/// the options of the loop.
struct TaskLoop {
  Graph* graph = nullptr;         ///< Mutable: a released weight leaves its initializer.
  std::vector<LoopTask> tasks;    ///< Per task id (Trace::Event::task, the hand-off's task).
  std::vector<Tensor> constants;  ///< Per ValueId: initializers.
  int threads = 1;                ///< Intra-op threads of each worker.
  /// Per worker, its own intra-op threads where they differ (a hybrid plan's devices); empty:
  /// every worker runs `threads`.
  std::vector<int> worker_threads;
  bool concurrent = false;       ///< Workers run at once: counts are atomic, placement locked.
  double timeout_seconds = 300;  ///< The longest wait for one input.
  /// A buffer read on another core goes back to its pool only after this many more bytes
  /// (ParallelOptions::remote_read_hold_back_bytes); 0: at once.
  std::size_t hold_back_bytes = 0;
  /// Per worker, its pool (the thread executor's): a task takes its buffers from its worker's
  /// unless WorkerRun::pool is set, and a held-back buffer is held in each.
  std::vector<BufferPool>* pools = nullptr;
  /// Per initializer: reads whose kernel has not packed it for good; null: weights stay.
  std::unique_ptr<std::atomic<int>[]> packers_left;
  std::atomic<std::size_t> released_weight_bytes{0};
  /// In-place Concat for this run (place_concat_inputs); null: off.
  const ConcatPlacement* placement = nullptr;
  std::vector<std::vector<std::shared_ptr<Buffer>>> shared;  ///< Per sample, per root ValueId.
  std::mutex shared_mutex;
};

/// Per-task calls the MPI executor makes around the loop (fault injection, gathering outputs).
class TaskHooks {
 public:
  virtual ~TaskHooks() = default;
  /// Before the task at `position` of the worker's order.
  virtual void before_task(int position) = 0;
  /// After a task's kernel finished (`seconds` after it started), before its outputs are
  /// handed off: an emulated slower rank pauses here (distributed/emulated_speed.h).
  virtual void after_compute(double seconds) { (void)seconds; }
  /// After a task and its values were handed off and freed.
  virtual void after_task() = 0;
};

/// One worker's part of one run.
struct WorkerRun {
  std::span<const int> order;  ///< Task ids in the order this worker runs them.
  int64_t run = 0;             ///< The hand-off's run number.
  BufferPool* pool = nullptr;  ///< Null: each task's worker's pool in TaskLoop::pools.
  dnnl::engine* engine = nullptr;
  dnnl::stream* stream = nullptr;
  /// Null: one worker, every value read where its producer left it.
  ValueHandOff* hand_off = nullptr;
  /// Per sample of the run, its graph inputs; empty: they come through the hand-off.
  std::span<const SampleInputs> inputs;
  std::chrono::steady_clock::time_point start;  ///< Trace times count from here.
  bool timed = true;                            ///< Time tasks and report events.
  TraceRecorder* recorder = nullptr;            ///< Keeps the events; may be null.
  std::vector<Trace::Event>* events = nullptr;  ///< Appended to (a stream of runs); may be null.
  const std::vector<std::shared_ptr<ExecutorObserver>>* observers = nullptr;
  TaskHooks* hooks = nullptr;
};

/// How a worker's loop ended: all its tasks ran, or a wait for an input did not end well.
struct LoopEnd {
  ValueHandOff::Wait wait = ValueHandOff::Wait::kReady;  ///< kReady: every task ran.
  int task = -1;                                         ///< The task that waited.
  TaskInput awaited;  ///< What it waited for (kTask, or kGraphInput of the task's sample).
};

/// Runs the worker's tasks in order. A kernel's error is thrown; a wait the hand-off answers
/// kStopped or kTimedOut ends the loop and says so.
LoopEnd run_worker_tasks(TaskLoop& loop, const WorkerRun& run);

/// Before each run: every task's reads left, from its uses.
void reset_reads(TaskLoop& loop);

/// A runner for `node` whose outputs may be blocked where every reader takes them so (for a
/// graph output: where `hand_off` allows it).
std::unique_ptr<NodeRunner> make_runner(const Graph& graph, NodeId node, bool blocked_layouts,
                                        ConvolutionFamily family, ClaimPool* claim_pool = nullptr,
                                        const LayoutHandOff* hand_off = nullptr);

/// Tells each runner of `loop` whether its node's outputs are shaped at run time
/// (run_time_nodes), so that their buffers come from BufferPool::acquire_run_time.
void mark_run_time_outputs(TaskLoop& loop);

/// Counts each task's reads into its producers' uses, and marks reads on another worker.
void count_uses(TaskLoop& loop);

/// Counts, per initializer, the reads of `loop`'s tasks that have a runner
/// (release_packed_weights).
void count_packers(TaskLoop& loop);

/// The initializers that every task reading them has a prepared kernel for that packed them
/// for good (inputs_packed_for_good): none of the loop's kernels reads their loaded bytes again.
std::vector<ValueId> weights_packed_for_good(const TaskLoop& loop);

/// Adds each event's time to its task's node in `stats.node_seconds`.
void add_node_seconds(const TaskLoop& loop, const Trace& trace, RunStats& stats);

/// Per NodeId, the implementation of the runner of each task that has one.
std::vector<std::string> implementations(const TaskLoop& loop, std::size_t node_capacity);

}  // namespace cleave
