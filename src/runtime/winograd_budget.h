// Which 3x3 convolutions of the Winograd family keep Winograd: a model-wide weight-byte budget.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernels/nn/conv_problem.h"

namespace cleave {

/// The Winograd family's budget: its transformed weights may add at most `fraction` of the
/// model's plain weight bytes, or `floor_bytes` when that is more (a small model's few MiB are
/// worth their time). oneDNN's AVX-512 kernel, F(4x4, 3x3), holds a 6x6 tile per 3x3 kernel,
/// four times the weight: retinanet's added 192 MiB of packed copies (and 50 MiB of
/// scratchpad) to a blocked peak of 0.74x ONNX Runtime's. A quarter kept retinanet's peak
/// below ONNX Runtime's (336 against 348-386 MiB); half did not (419 MiB).
///
/// The default budget cuts only where keeping every candidate would add more than
/// `applies_above` of the plain weight bytes: oneDNN's F(4x4, 3x3) on most of a model's
/// weights (retinanet: 1.86x), not F(2x2, 3x3)'s x16/9 copies (the ResNets: under 0.8x), whose
/// peak stays far below ONNX Runtime's (wide_resnet50_2 0.63x, resnet34 0.72x) and which ran
/// 3-10% slower with layers sent direct.
struct WinogradBudget {
  std::optional<double> fraction = 0.25;  ///< nullopt: no budget, every candidate keeps it.
  double floor_bytes = 32.0 * (1 << 20);
  double applies_above = 1.0;  ///< 0: the budget always applies (a fraction asked for).
};

/// The Winograd kernel the family runs, by what it saves and holds.
struct WinogradKernel {
  double weight_factor = 4.0;    ///< Its weights' bytes over the plain ones'.
  double saved_fraction = 0.75;  ///< The share of the direct kernel's flops it saves.
  /// Ask oneDNN the size of each convolution's Winograd weights instead: it picks F(4x4, 3x3)
  /// (weights x4) or F(2x2, 3x3) (x16/9) per problem, and none for some.
  bool ask_onednn = false;
  bool own = false;  ///< cleave's own kernel, whose small-map rule is its own (winograd_pays).
};

/// oneDNN's kernels under AVX-512 (ask_onednn); cleave's own F(2x2, 3x3) (16 products per 4
/// outputs, weights x16/9) below it.
WinogradKernel winograd_kernel_here();

/// What winograd_pays needs to know of a run of `kernel` on a team of `threads`.
conv_detail::WinogradRun winograd_run(int threads,
                                      const WinogradKernel& kernel = winograd_kernel_here());

/// One weight the Winograd family could transform, with every Conv that reads it: the readers
/// share one packed copy, so they keep Winograd or run direct together.
struct WinogradCandidate {
  ValueId weight = kNoValue;
  std::vector<NodeId> nodes;  ///< Its Winograd-shaped Conv readers, in node order.
  /// Flops the kernel saves over all of them; a reader of unknown output shape adds none.
  double saved_flops = 0;
  /// Its transformed copy less the plain one the direct kernels would hold.
  double extra_bytes = 0;
  /// The largest scratchpad oneDNN's Winograd kernel books for one of its readers
  /// (primitive_desc::scratchpad_desc; 0 where the kernel is not asked, ask_onednn false).
  double scratchpad_bytes = 0;
};

/// The candidates split into those that keep Winograd and those that run direct.
struct WinogradSelection {
  WinogradBudget budget;
  double plain_weight_bytes = 0;  ///< Every initializer's bytes.
  double budget_bytes = 0;        ///< Infinite without a budget.
  /// In the order taken: the most flops saved per extra byte first.
  std::vector<WinogradCandidate> kept;
  std::vector<WinogradCandidate> direct;  ///< Over the budget: the direct kernels run them.
  /// Winograd-shaped Convs whose output maps are too small for it to pay (winograd_map_pays)
  /// on the selection's team: no candidates, the direct kernels run them whatever the budget.
  /// In node order.
  std::vector<NodeId> small_maps;

  double kept_bytes() const;  ///< Extra bytes of the kept ones.
  /// The largest scratchpad of the kept ones: a thread's scratchpad serves one primitive at a
  /// time, so it grows to the largest (raft_small's F(4x4, 3x3) on 8 channels: 10 MiB).
  double kept_scratchpad_bytes() const;
  double saved_bytes() const;           ///< Extra bytes the direct ones would have added.
  bool runs_direct(NodeId node) const;  ///< Over the budget or on a small map.
};

/// Parses a budget: a fraction of the plain weight bytes (0 or more; exactly that, no floor,
/// applied whatever the candidates would add), or "none". Throws Error naming `origin` and what was
/// expected for anything else.
WinogradBudget parse_winograd_budget(const std::string& text, const std::string& origin);

/// The budget $CLEAVE_WINOGRAD_BUDGET sets (parse_winograd_budget); the default when unset.
/// "none" is the override that gives every 3x3 convolution Winograd.
WinogradBudget winograd_budget_from_environment();

/// Short text of a budget for cache keys: "wb0.5" or "wbnone".
std::string winograd_budget_key(const WinogradBudget& budget);

/// Short text of what decides the Winograd family's kernels, for cache keys: the environment's
/// budget (winograd_budget_key) and the small-map rule's thresholds,
/// "wb0.25-32-1-m25-1000000-4-t49-12000000-o64-512" (the thread count is in the keys beside it).
std::string winograd_family_key();

/// The Winograd candidates of `graph` (weights of Convs of a 4-D input and a constant 3x3
/// weight, stride 1, no dilation or groups) ranked by saved flops per extra byte, each kept
/// while its extra bytes still fit the budget; one that does not fit runs direct, and later,
/// smaller ones may still fit. A pure function of the graph, the ISA and the intra-op team
/// `threads` that decides the small maps (winograd_pays), so every executor of it agrees node
/// for node. A Conv kernel asks with its own team (KernelContext::threads), which is below its
/// executor's only under about 2 M flops (intra_op_team: 1 M per thread), where winograd_pays
/// answers alike at any thread count: the kernel and its executor agree on its own map. Such a
/// node's budget ranking may still differ, since at 1 thread the 6x6 and 7x7 maps that 2
/// threads run direct are candidates too; that matters only where a budget applies.
WinogradSelection select_winograd(const Graph& graph, const WinogradBudget& budget, int threads,
                                  const WinogradKernel& kernel = winograd_kernel_here());

/// Whether Winograd pays for the Conv `node`'s output map and channels run as `run` says
/// (conv_detail::winograd_pays); true where a size is not known before the run.
bool winograd_map_pays(const Graph& graph, const Node& node, const conv_detail::WinogradRun& run);

/// Whether the Winograd family runs `node` on the direct kernels on a team of `threads`: over
/// the environment's budget, or on a small map (WinogradSelection::runs_direct).
bool winograd_over_budget(const Graph& graph, NodeId node, int threads);

/// "12 of 66 3x3 convolutions run direct: 180.3 MiB of Winograd weights saved (budget 65.0
/// MiB: 0.5 x 129.9 MiB of weights)" and the like.
std::string describe(const WinogradSelection& selection);

/// The names of the nodes that run direct (over the budget or on small maps), in node order.
std::vector<std::string> direct_node_names(const Graph& graph, const WinogradSelection& selection);

}  // namespace cleave
