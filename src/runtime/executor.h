// The sequential executor: runs a graph's nodes in topological order on the calling thread.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "runtime/buffer_pool.h"
#include "runtime/claim_pool.h"
#include "runtime/concat_placement.h"
#include "runtime/executor_interface.h"
#include "runtime/kernel.h"
#include "runtime/layout_hand_off.h"
#include "runtime/node_runner.h"
#include "runtime/output_placement.h"
#include "runtime/task_loop.h"
#include "runtime/tensor.h"

namespace cleave {

struct ExecutorOptions {
  int threads = 1;              ///< Intra-op threads.
  bool blocked_layouts = true;  ///< Let oneDNN kernels pass blocked layouts to each other.
  /// Time every node (RunStats::node_seconds) and keep the last run's Trace (one worker, task
  /// = position in topological order).
  bool collect_stats = false;
  /// From the second run on, let producers write Concat inputs straight into the Concat's
  /// output (see place_concat_inputs).
  bool in_place_concat = true;
  /// How convolutions compute (with blocked_layouts only); choose_layouts measures which is
  /// fastest for a model.
  ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked;
  /// A pool shared by executors that run one after another on one thread (a spatial split's
  /// sub-models on one rank), so that their activations need the memory of the values live at
  /// the peak, not each executor's own peak added up. Make it with `BufferPool(false)`.
  /// Unset: the executor's own pool, with a static buffer plan.
  std::optional<BufferPool> pool = std::nullopt;
  /// Without `pool`: the memory its static buffer plan's arena takes, shared with executors
  /// that never run while this one does (the layout choice's, timed in turn on one thread).
  std::shared_ptr<SharedArena> shared_arena = nullptr;
  /// Frees an initializer's loaded bytes once every node that reads it has a kernel keeping a
  /// packed copy of its own (static shapes: such a kernel is never prepared again). Copies of a
  /// graph share initializer bytes, so the memory comes back only when no other copy holds
  /// them (`cleave run` keeps none).
  bool release_packed_weights = false;
  /// False: float Gemm and MatMul nodes read constant weights where they lie instead of packing
  /// a copy of their own. For executors that run beside another holding the loaded bytes (the
  /// layout choice's): a product computes alike in every convolution family, and its packed
  /// copy doubled what it held (vgg11's classifier: 472 MiB loaded and 472 packed).
  bool pack_product_weights = true;
  /// On a host whose cores other processes hold (claim_threads_for): this many threads share
  /// each batch-1 convolution in blocked layouts, cut into output-channel parts of 1-thread
  /// primitives that each thread claims one at a time, so that the thread that has a core takes
  /// the parts of one that waits for one; every other kernel runs on `threads` (1). 0: off.
  int claim_threads = 0;
  /// Shared with the executors of the other parts of one graph (a pipeline's stages): graph
  /// outputs it lets stay blocked are computed so, returned plain and their layouts recorded;
  /// graph inputs with a recorded layout are reordered into it before the kernels read them.
  std::shared_ptr<LayoutHandOff> layout_hand_off = nullptr;
};

/// The sequential executor: runs nodes in topological order on the calling thread, with
/// per-node kernel preparation, layout reorders and buffer reuse by liveness.
class Executor : public ExecutorInterface {
 public:
  /// Copies the graph (cheap: initializer bytes are shared) and checks every node has a
  /// kernel, so an unsupported op is reported before anything runs.
  Executor(const Graph& graph, ExecutorOptions options = {});
  /// Runs once. Inputs by graph input name, each plain; missing inputs, wrong types or ranks
  /// are errors naming the input. Returns the graph outputs in order, plain.
  std::vector<Tensor> run(const SampleInputs& inputs) override;
  /// Runs each sample in turn.
  std::vector<std::vector<Tensor>> run(const std::vector<SampleInputs>& inputs) override;
  int samples() const override { return 1; }
  const RunStats& stats() const override { return stats_; }
  void reset_stats() override;
  const Trace& last_trace() const override { return trace_.trace(); }
  const Graph& graph() const { return graph_; }
  /// Nodes in the order they run: Trace::Event::task is a position in it.
  const std::vector<NodeId>& order() const { return order_; }
  /// The initializers whose loaded bytes none of this executor's kernels reads again: each of
  /// their readers was prepared (a run happened) and packed them for good.
  std::vector<ValueId> weights_packed_for_good() const;
  /// Whether the last run took its activation buffers from a static buffer plan (BufferPool).
  bool last_run_planned() const { return pool_.last_run_planned(); }
  /// Lets go of the static buffer plan's memory until the next run takes it again
  /// (BufferPool::release_arena). Not while a run is in progress.
  void release_activation_memory() { pool_.release_arena(); }

 private:
  void plan_in_place_concats();
  SampleInputs relaid_inputs(const SampleInputs& inputs);

  Graph graph_;
  ExecutorOptions options_;
  std::unique_ptr<ClaimPool> claim_pool_;  // With claim_threads; outlives the kernels.
  std::vector<NodeId> order_;
  std::vector<int> tasks_;          // 0, 1, ...: the one worker's order of task ids.
  std::unique_ptr<TaskLoop> loop_;  // Task = position in order_.
  BufferPool pool_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  RunStats stats_;
  TraceRecorder trace_;       // Filled with collect_stats only.
  std::string stats_inputs_;  // Input shapes of the run that filled stats_.implementations.
  // In-place Concat, planned from the kernels prepared for the inputs of `placement_inputs_`.
  ConcatPlacement placement_;
  std::string placement_inputs_;
  std::vector<std::pair<NodeId, std::size_t>> producer_slot_;  // Per ValueId: position, output.
};

}  // namespace cleave
