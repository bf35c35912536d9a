// The kernel interface and registry: how an op becomes a prepared, repeatedly runnable kernel.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/convolution_family.h"
#include "runtime/tensor.h"

namespace cleave {

class ClaimPool;

/// What a kernel factory sees when it prepares a node. Preparation happens right before the
/// node first runs (and again if its input shapes change), so every input tensor is already
/// computed: shape-like inputs (Reshape's shape, Slice's starts) can be read here.
struct KernelContext {
  const Graph& graph;
  NodeId node_id;
  const Node& node;
  int64_t opset;  ///< Opset version of the node's domain.
  /// The actual inputs; nullptr for an omitted optional input. May be blocked (oneDNN layout)
  /// only at positions the kernel accepted through `KernelInfo::accepts_blocked`.
  std::vector<const Tensor*> inputs;
  /// True where the input is an initializer or folded constant: its contents never change
  /// between runs, so a kernel may pre-pack it (e.g. reorder conv weights) at preparation.
  std::vector<bool> constant;
  dnnl::engine& engine;
  int threads = 1;  ///< Intra-op threads this kernel may use (the OpenMP team is already set).
  /// Whether consumers of the outputs can take oneDNN blocked layouts; when false the kernel
  /// must produce plain outputs.
  bool blocked_outputs_allowed = false;
  /// How convolutions compute (ExecutorOptions::convolution_family). Channels-last applies
  /// only where blocked outputs are allowed.
  ConvolutionFamily convolution_family = ConvolutionFamily::kBlocked;
  /// ExecutorOptions::claim_threads: the threads that share a convolution's output-channel
  /// parts, claiming one at a time, while `threads` (then 1) runs everything else; null when
  /// off. Outlives the kernel.
  ClaimPool* claim_pool = nullptr;
  /// ExecutorOptions::pack_product_weights: false where float Gemm/MatMul read constant
  /// weights where they lie instead of packing a copy of their own.
  bool pack_product_weights = true;

  const Tensor& input(std::size_t i) const;  ///< Throws Error naming the node if missing.
  bool has_input(std::size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  std::string where() const;  ///< "node 'conv1' (Conv)" for messages.
};

/// What a prepared kernel will produce.
struct OutputSpec {
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> shape;
  std::optional<dnnl::memory::desc> layout;  ///< Set for a oneDNN-blocked output.
  /// Reuse input `alias_of`'s storage instead of allocating (Reshape, Identity, Flatten): the
  /// output then shares bytes with that input.
  int alias_of = -1;
};

/// A node prepared for fixed input shapes; `run` may be called many times.
class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Shapes, types and layouts of the outputs, fixed at preparation.
  virtual std::vector<OutputSpec> output_specs() const = 0;
  /// Computes the outputs. `outputs` are allocated per output_specs (or aliased). Inputs are
  /// never written to. Throws Error on a runtime failure (naming the node).
  virtual void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                   dnnl::stream& stream) = 0;
  /// Which library implementation computes it ("jit_fp32_wino_2x3:avx512_core"), where known.
  virtual std::string implementation() const { return {}; }
  /// Whether the output shapes announced still hold for these inputs' values. Kernels whose
  /// shapes follow values computed during the run (Reshape of a computed shape, NonZero, NMS)
  /// answer false when those values changed, and the node is prepared again: the shape is
  /// known only at run time, and buffers are sized then.
  virtual bool prepared_for_values(const std::vector<const Tensor*>& inputs) const {
    (void)inputs;
    return true;
  }
};

/// Registration data of an op implementation.
struct KernelInfo {
  std::string op_type;
  std::string domain;       ///< "" = ai.onnx.
  int64_t since_opset = 1;  ///< Used for opsets >= since_opset (until the next entry).
  /// Input positions that may be given in a oneDNN blocked layout.
  std::function<bool(std::size_t input)> accepts_blocked = [](std::size_t) { return false; };
  /// Element types the implementation handles (checked before preparing).
  std::vector<DataType> dtypes = {DataType::kFloat};
  /// Makes the kernel; throws Error naming the node when attributes or shapes are invalid,
  /// or UnsupportedError for valid ONNX that this implementation does not cover.
  std::function<std::unique_ptr<Kernel>(const KernelContext&)> create;
};

class KernelRegistry {
 public:
  /// The registry with every kernel of cleave (built once, thread-safe to read).
  static const KernelRegistry& global();
  void add(KernelInfo info);
  /// The entry for this op at this opset, or nullptr.
  const KernelInfo* find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  std::vector<std::string> op_types() const;

 private:
  std::vector<KernelInfo> entries_;
};

/// Element type of a node output when the kernel's choice needs to follow an input.
inline DataType same_as_input(const KernelContext& context, std::size_t input = 0) {
  return context.input(input).dtype();
}

}  // namespace cleave
