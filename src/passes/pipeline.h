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
  /// Conv+Relu/Clip fusion into Conv attributes. Off by default because the attributes are not
  /// ONNX (see fuse_conv_activations): only for graphs cleave runs itself, never exported ones.
  bool fuse_activations = false;
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
/// removal → Conv+BatchNormalization fusion → Conv+activation fusion (when enabled) →
/// dead-code elimination. Returns the per-step results in `steps` and their counts summed by
/// name in `counts`. Throws Error naming the step when verification after it fails.
PassResult optimize_graph(Graph& graph, const OptimizeOptions& options = {});

}  // namespace cleave
