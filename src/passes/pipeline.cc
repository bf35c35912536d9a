// The optimization pipeline, read top to bottom as the order of the passes.
#include "passes/pipeline.h"

#include <fmt/core.h>

#include "ir/verify.h"
#include "passes/channel_scale_folding.h"
#include "passes/constant_folding.h"
#include "passes/conv_activation_fusion.h"
#include "passes/conv_batchnorm_fusion.h"
#include "passes/dead_code.h"
#include "passes/identity_removal.h"
#include "passes/layer_norm_fusion.h"
#include "passes/matmul_epilogue_fusion.h"
#include "passes/pad_fusion.h"

namespace cleave {

namespace {

// Records one finished step: logs it, checks the graph, keeps its result.
class StepRecorder {
 public:
  StepRecorder(Graph& graph, const OptimizeOptions& options, PassResult& total)
      : graph_(graph), options_(options), total_(total) {}

  void operator()(PassResult step) {
    if (options_.log) options_.log(step.summary());
    if (options_.verify_each_step) {
      try {
        verify_graph(graph_);
      } catch (const Error& e) {
        throw Error(
            fmt::format("graph '{}' is invalid after {}: {}", graph_.name, step.pass, e.what()));
      }
    }
    total_.merge_counts(step);
    total_.steps.push_back(std::move(step));
  }

 private:
  Graph& graph_;
  const OptimizeOptions& options_;
  PassResult& total_;
};

}  // namespace

PassResult optimize_graph(Graph& graph, const OptimizeOptions& options) {
  PassResult total{"optimize", {}, {}};
  StepRecorder record(graph, options, total);
  if (options.fold_constants) {
    record(fold_constants(graph, ConstantFoldingOptions{options.max_folded_bytes}));
  }
  record(eliminate_dead_code(graph));
  record(remove_identities(graph));
  record(fold_pads(graph));
  if (options.fuse_batchnorm) record(fuse_conv_batchnorm(graph));
  // After batch-norm fusion, which rewrites the weights this scales.
  if (options.fold_channel_scales) record(fold_channel_scales(graph));
  if (options.fuse_activations) {
    record(fuse_conv_activations(graph));
    record(fuse_layer_norms(graph));
    record(fuse_matmul_epilogues(graph));
  }
  // Fusions leave the old weights, biases and bounds, and folded Pads, unread.
  record(eliminate_dead_code(graph));
  return total;
}

}  // namespace cleave
