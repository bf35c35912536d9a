// The optimization pipeline: the graph passes in their order, each step logged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

struct OptimizeOptions {
  bool fold_constants = true;
  /// Conv+BatchNormalization fusion.
  bool fuse_batchnorm = true;
  /// The runtime-only fusions: Conv+activation (fuse_conv_activations), LayerNormalization
  /// (fuse_layer_norms) and MatMul bias+activation (fuse_matmul_epilogues). Off by default
  /// because their results are not valid ONNX: only for graphs cleave runs itself, never
  /// exported ones.
  bool fuse_activations = false;
  /// Channel-scale folding (fold_channel_scales). Valid ONNX, but it trades pre-packed
  /// constant weights for a cheaper Mul, a choice made for cleave's runtime; so also off by
  /// default.
  bool fold_channel_scales = false;
  /// Runs verify_graph after every step, so that a broken pass is named at once.
  bool verify_each_step =
#ifdef NDEBUG
      false;
#else
      true;
#endif
  int64_t max_folded_bytes = int64_t{64} << 20;  ///< See ConstantFoldingOptions.
  /// Called with each step's summary line ("constant folding: 12 nodes folded") as it ends.
  std::function<void(const std::string&)> log;
};

/// Runs the passes in order: constant folding → dead-code elimination → Identity/Dropout
/// removal → Zero-Pad folding → Conv+BatchNormalization fusion → channel-scale folding (when
/// enabled) → Conv+activation, LayerNormalization and MatMul
/// epilogue fusion (when enabled) → dead-code elimination. Returns the per-step results in `steps`
/// and their counts summed by name in `counts`. Throws Error naming the step when verification
/// after it fails.
PassResult optimize_graph(Graph& graph, const OptimizeOptions& options = {});

}  // namespace cleave
