// The optimization pipeline: the graph passes in their order, each step logged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

struct OptimizeOptions {
  /// QDQ fusion (fuse_qdq): int8 Conv/MatMul/Gemm/Add of QDQ models onto the QLinear ops.
  bool fuse_qdq = true;
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

/// Runs the passes in order: QDQ fusion → constant folding → dead-code elimination →
/// Identity/Dropout removal → common-subexpression elimination → Einsum lowering → Zero-Pad
/// folding → dead-tap removal → Conv+BatchNormalization fusion → channel-scale folding (when
/// enabled) → Conv+activation, LayerNormalization and MatMul epilogue fusion (when enabled) →
/// dead-code elimination. Returns the per-step results in `steps` and their counts summed by name
/// in `counts`. Throws Error naming the step when verification after it fails.
PassResult optimize_graph(Graph& graph, const OptimizeOptions& options = {});

/// The passes by the names `run_passes` takes, in the order optimize_graph runs them:
/// fuse-qdq, fold-constants, dead-code, remove-identities, eliminate-common-subexpressions,
/// lower-einsums, fold-pads, remove-dead-taps, fuse-batchnorm, fold-channel-scales,
/// fuse-conv-activations, fuse-layer-norms, fuse-matmul-epilogues.
const std::vector<std::string>& pass_names();

/// The passes optimize_graph runs with these options, in order.
std::vector<std::string> optimize_pass_list(const OptimizeOptions& options);

/// Called after each step with its result and the graph as the step left it.
using AfterPass = std::function<void(const PassResult& step, const Graph& graph)>;

/// Runs the named passes in the order given (a name may repeat), logging and verifying each
/// step as optimize_graph does (`options` supplies log, verify_each_step and
/// max_folded_bytes; its switches are ignored). Throws Error naming an unknown pass and the
/// known ones before any pass runs.
PassResult run_passes(Graph& graph, const std::vector<std::string>& names,
                      const OptimizeOptions& options = {}, const AfterPass& after_each = {});

}  // namespace cleave
