// One node on this CPU: its kernel, prepared (and re-prepared when input shapes change) and run.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/buffer_pool.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

/// Prepares (and re-prepares when input shapes change) and runs one node.
class NodeRunner {
 public:
  NodeRunner(const Graph& graph, NodeId node, bool blocked_outputs_allowed,
             ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked,
             ClaimPool* claim_pool = nullptr);
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
  /// The prepared kernel; null before the first run.
  const Kernel* kernel() const { return kernel_.get(); }
  /// The intra-op threads the prepared kernel was made for and runs on (intra_op_team.h): the
  /// threads given when it was prepared, or fewer for a small node; 0 before the first run.
  int team() const { return team_; }
  /// Whether the node's outputs have a shape known only at run time (run_time_nodes): their
  /// buffers then come from BufferPool::acquire_run_time. Off until set.
  void set_shaped_at_run_time(bool shaped) { shaped_at_run_time_ = shaped; }
  /// ExecutorOptions::pack_product_weights for the kernels this runner prepares. On until set.
  void set_pack_product_weights(bool pack) { pack_product_weights_ = pack; }

 private:
  const Graph* graph_;
  NodeId node_;
  const KernelInfo* info_ = nullptr;
  bool blocked_outputs_allowed_;
  ConvolutionFamily convolution_family_;
  ClaimPool* claim_pool_ = nullptr;
  bool shaped_at_run_time_ = false;
  bool pack_product_weights_ = true;
  int64_t opset_;
  int team_ = 0;
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
/// Whether `value` has readers and every one takes it in a blocked layout.
bool readers_take_blocked(const Graph& graph, ValueId value);

/// A plain (row-major) copy of a blocked tensor, or the tensor itself when already plain.
Tensor to_plain(const Tensor& tensor, dnnl::engine& engine, dnnl::stream& stream);

}  // namespace cleave
