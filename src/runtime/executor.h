// Runs a graph on this CPU: per-node kernel preparation, layout reorders, buffer reuse, stats.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/concat_placement.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

/// Hands out activation buffers and takes them back when no tensor uses them any more, so a
/// run needs only as much memory as its live values (best fit among free buffers).
class BufferPool {
 public:
  std::shared_ptr<Buffer> acquire(std::size_t bytes);
  /// Keeps `buffer` from being handed out again until the pool has handed out `bytes` more
  /// (ignored when the buffer is not this pool's). For a buffer another core has read:
  /// rewriting it while that core's cache still holds its lines costs several times a plain
  /// write.
  void hold_back(const Buffer& buffer, std::size_t bytes);
  /// Bytes held by the pool: the activation memory a run needed at its peak.
  std::size_t reserved_bytes() const;

 private:
  struct Entry {
    std::shared_ptr<Buffer> buffer;
    std::size_t free_after = 0;  ///< Reusable once handed_out_ reaches this.
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::size_t reserved_ = 0;
  std::size_t handed_out_ = 0;  ///< Bytes acquire() has returned, reused or new.
};

/// Input names with their types and shapes: an in-place Concat placement holds only for the
/// shapes whose kernels it was planned from.
std::string input_shape_signature(const std::map<std::string, Tensor>& inputs);

/// Sets `placed[i]` to a view into its shared Concat buffer for every output of a node that
/// `placement` puts in one (acquiring the buffer from `pool` for the first writer; `shared` is
/// indexed by root ValueId), leaving the others empty. Returns whether any output is placed.
bool place_outputs(const ConcatPlacement& placement, const std::vector<ValueId>& outputs,
                   const std::vector<OutputSpec>& specs,
                   std::vector<std::shared_ptr<Buffer>>& shared, BufferPool& pool,
                   std::vector<Tensor>& placed);

/// Prepares (and re-prepares when input shapes change) and runs one node.
class NodeRunner {
 public:
  NodeRunner(const Graph& graph, NodeId node, bool blocked_outputs_allowed,
             ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked);
  /// Runs the node on `inputs` (nullptr for omitted ones), filling `outputs`. Blocked inputs
  /// must be at positions the kernel accepts (the executor guarantees it).
  /// A non-empty `placed[i]` is used as output i instead of a fresh buffer (in-place Concat).
  void run(const std::vector<const Tensor*>& inputs, const std::vector<bool>& constant,
           std::vector<Tensor>& outputs, BufferPool& pool, dnnl::engine& engine,
           dnnl::stream& stream, int threads, const std::vector<Tensor>* placed = nullptr);
  NodeId node() const { return node_; }
  const KernelInfo& info() const { return *info_; }
  /// The outputs of the prepared kernel; empty before the first run.
  const std::vector<OutputSpec>& specs() const { return specs_; }
  /// Kernel::implementation of the prepared kernel; empty before the first run.
  std::string implementation() const { return kernel_ ? kernel_->implementation() : ""; }

 private:
  const Graph* graph_;
  NodeId node_;
  const KernelInfo* info_ = nullptr;
  bool blocked_outputs_allowed_;
  ConvolutionFamily convolution_family_;
  int64_t opset_;
  std::unique_ptr<Kernel> kernel_;
  std::vector<OutputSpec> specs_;
  // What the kernel was made for, per input: absent, or its type, shape and oneDNN layout.
  // Compared on every run, so it holds the fields themselves rather than a text of them.
  struct InputSignature {
    bool present = false;
    DataType dtype{};
    std::vector<int64_t> shape;
    std::optional<dnnl::memory::desc> layout;
  };
  std::vector<InputSignature> signature_;
  bool prepared_for(const std::vector<const Tensor*>& inputs) const;
};

/// Which kernel runs a node; throws UnsupportedError naming the node when none does.
const KernelInfo& kernel_for(const Graph& graph, NodeId node);
int64_t opset_of(const Graph& graph, const Node& node);
/// Whether every consumer of `value` accepts a blocked layout there and it is no graph output.
bool blocked_layout_allowed(const Graph& graph, ValueId value);

/// A plain (row-major) copy of a blocked tensor, or the tensor itself when already plain.
Tensor to_plain(const Tensor& tensor, dnnl::engine& engine, dnnl::stream& stream);

struct ExecutorOptions {
  int threads = 1;              ///< Intra-op threads.
  bool blocked_layouts = true;  ///< Let oneDNN kernels pass blocked layouts to each other.
  bool collect_stats = false;   ///< Time every node.
  /// From the second run on, let producers write Concat inputs straight into the Concat's
  /// output (see place_concat_inputs).
  bool in_place_concat = true;
  /// How convolutions compute (with blocked_layouts only); choose_layouts measures which is
  /// fastest for a model.
  ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked;
};

struct RunStats {
  std::size_t peak_activation_bytes = 0;  ///< Bytes the buffer pool reserved.
  int concat_inputs_in_place = 0;         ///< Values written inside a Concat's output.
  std::vector<double> node_seconds;       ///< Per NodeId, summed over runs.
  int64_t runs = 0;
};

/// The sequential executor: runs nodes in topological order on the calling thread.
class Executor {
 public:
  /// Copies the graph (cheap: initializer bytes are shared) and checks every node has a
  /// kernel, so an unsupported op is reported before anything runs.
  Executor(const Graph& graph, ExecutorOptions options = {});
  /// Runs once. Inputs by graph input name, each plain; missing inputs, wrong types or ranks
  /// are errors naming the input. Returns the graph outputs in order, plain.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  const RunStats& stats() const { return stats_; }
  /// Per NodeId, Kernel::implementation of its prepared kernel ("jit:avx2", "ref:any", "" for
  /// kernels of cleave's own or before the first run).
  std::vector<std::string> implementations() const;
  /// Forgets node times so far (e.g. after warm-up runs that included kernel preparation).
  void reset_stats();
  const Graph& graph() const { return graph_; }

 private:
  void plan_in_place_concats();

  Graph graph_;
  ExecutorOptions options_;
  std::vector<NodeId> order_;
  std::vector<std::unique_ptr<NodeRunner>> runners_;  // Per position in order_.
  std::vector<Tensor> constants_;                     // Per ValueId (initializers).
  BufferPool pool_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  RunStats stats_;
  // In-place Concat, planned from the kernels prepared for the inputs of `placement_inputs_`.
  ConcatPlacement placement_;
  std::string placement_inputs_;
  std::vector<std::pair<NodeId, std::size_t>> producer_slot_;  // Per ValueId: position, output.
};

/// Checks the caller's inputs against the graph's declared inputs (names, types, ranks and
/// known dims); throws Error naming the input and what was expected.
void check_inputs(const Graph& graph, const std::map<std::string, Tensor>& inputs);

}  // namespace cleave
