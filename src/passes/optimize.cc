// The optimization pipeline, read top to bottom as the order of the passes.
#include "passes/optimize.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "ir/verify.h"
#include "passes/channel_scale_folding.h"
#include "passes/common_subexpression.h"
#include "passes/constant_folding.h"
#include "passes/conv_activation_fusion.h"
#include "passes/conv_batchnorm_fusion.h"
#include "passes/dead_code.h"
#include "passes/dead_tap_removal.h"
#include "passes/einsum_lowering.h"
#include "passes/identity_removal.h"
#include "passes/layer_norm_fusion.h"
#include "passes/matmul_epilogue_fusion.h"
#include "passes/pad_fusion.h"
#include "passes/qdq_fusion.h"
#include "passes/sequence_lowering.h"

namespace cleave {

namespace {

// Records one finished step: logs it, checks the graph, keeps its result.
class StepRecorder {
 public:
  StepRecorder(Graph& graph, const OptimizeOptions& options, PassResult& total,
               const AfterPass& after_each)
      : graph_(graph), options_(options), total_(total), after_each_(after_each) {}

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
    if (after_each_) after_each_(step, graph_);
    total_.merge_counts(step);
    total_.steps.push_back(std::move(step));
  }

 private:
  Graph& graph_;
  const OptimizeOptions& options_;
  PassResult& total_;
  const AfterPass& after_each_;
};

PassResult run_pass(Graph& graph, const std::string& name, const OptimizeOptions& options) {
  if (name == "fold-constants") {
    return fold_constants(graph, ConstantFoldingOptions{options.max_folded_bytes});
  }
  if (name == "fuse-qdq") return fuse_qdq(graph);
  if (name == "lower-sequences") return lower_sequences(graph);
  if (name == "dead-code") return eliminate_dead_code(graph);
  if (name == "remove-identities") return remove_identities(graph);
  if (name == "eliminate-common-subexpressions") return eliminate_common_subexpressions(graph);
  if (name == "lower-einsums") return lower_einsums(graph);
  if (name == "fold-pads") return fold_pads(graph);
  if (name == "remove-dead-taps") return remove_dead_taps(graph);
  if (name == "fuse-batchnorm") return fuse_conv_batchnorm(graph);
  if (name == "fold-channel-scales") return fold_channel_scales(graph);
  if (name == "fuse-conv-activations") return fuse_conv_activations(graph);
  if (name == "fuse-layer-norms") return fuse_layer_norms(graph);
  if (name == "fuse-matmul-epilogues") return fuse_matmul_epilogues(graph);
  throw Error(fmt::format("unknown pass '{}'", name));
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = {"fuse-qdq",
                                                 "fold-constants",
                                                 "lower-sequences",
                                                 "dead-code",
                                                 "remove-identities",
                                                 "eliminate-common-subexpressions",
                                                 "lower-einsums",
                                                 "fold-pads",
                                                 "remove-dead-taps",
                                                 "fuse-batchnorm",
                                                 "fold-channel-scales",
                                                 "fuse-conv-activations",
                                                 "fuse-layer-norms",
                                                 "fuse-matmul-epilogues"};
  return names;
}

PassResult run_passes(Graph& graph, const std::vector<std::string>& names,
                      const OptimizeOptions& options, const AfterPass& after_each) {
  const std::vector<std::string>& known = pass_names();
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw Error(
          fmt::format("unknown pass '{}'; the passes are: {}", name, fmt::join(known, ", ")));
    }
  }
  PassResult total{"optimize", {}, {}};
  StepRecorder record(graph, options, total, after_each);
  for (const std::string& name : names) record(run_pass(graph, name, options));
  return total;
}

std::vector<std::string> optimize_pass_list(const OptimizeOptions& options) {
  std::vector<std::string> steps;
  // Before constant folding, which would turn the int8 weights' DequantizeLinear into floats.
  if (options.fuse_qdq) steps.push_back("fuse-qdq");
  if (options.fold_constants) steps.push_back("fold-constants");
  // After folding, which turns Constant positions into initializers; before dead code, which
  // then removes the sequence nodes left unread.
  steps.push_back("lower-sequences");
  // Dead taps after pad folding, which widens the pads they are measured against.
  // Common subexpressions after Identity removal, which would hide that two nodes read one value.
  steps.insert(steps.end(), {"dead-code", "remove-identities", "eliminate-common-subexpressions",
                             "lower-einsums", "fold-pads", "remove-dead-taps"});
  if (options.fuse_batchnorm) steps.push_back("fuse-batchnorm");
  // After batch-norm fusion, which rewrites the weights this scales.
  if (options.fold_channel_scales) steps.push_back("fold-channel-scales");
  if (options.fuse_activations) {
    steps.insert(steps.end(),
                 {"fuse-conv-activations", "fuse-layer-norms", "fuse-matmul-epilogues"});
  }
  // Fusions leave the old weights, biases and bounds, and folded Pads, unread.
  steps.push_back("dead-code");
  return steps;
}

PassResult optimize_graph(Graph& graph, const OptimizeOptions& options) {
  return run_passes(graph, optimize_pass_list(options), options);
}

}  // namespace cleave
