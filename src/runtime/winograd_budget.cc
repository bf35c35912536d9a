// The Winograd family's weight budget: which 3x3 convolutions keep Winograd (winograd_budget.h).
#include "runtime/winograd_budget.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "support/error.h"

namespace cleave {

namespace {

constexpr double kMiB = 1 << 20;

bool all_ones(const Node& node, std::string_view key) {
  const std::vector<int64_t> values = node.ints_attribute(key);
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v == 1; });
}

// Whether `node` is a Conv oneDNN's Winograd takes (winograd_shape) whose weights are packed
// once at preparation (an initializer), whatever its map.
bool winograd_shaped(const Graph& graph, const Node& node) {
  if (node.op_type != "Conv" || !node.domain.empty() || node.inputs.size() < 2 ||
      node.inputs[1] == kNoValue || graph.value(node.inputs[0]).shape.rank() != 4) {
    return false;
  }
  const Value& weights = graph.value(node.inputs[1]);
  const Shape& w = weights.shape;
  return weights.initializer && w.rank() == 4 && w.is_static() && w.sizes()[2] == 3 &&
         w.sizes()[3] == 3 && node.int_attribute("group", 1) == 1 && all_ones(node, "strides") &&
         all_ones(node, "dilations");
}

// What oneDNN's Winograd kernel holds for a Conv: its weights, and the scratchpad it books.
struct WinogradBytes {
  double weights = 0;
  double scratchpad = 0;
};

// The bytes of oneDNN's Winograd weights and scratchpad for a Conv of `node`'s shapes (no
// post-ops: they change neither), 0 where it has no Winograd kernel; remembered per problem,
// since every convolution's preparation asks for the whole model's selection.
WinogradBytes onednn_winograd_bytes(const Graph& graph, const Node& node) {
  const std::vector<int64_t> in = graph.value(node.inputs[0]).shape.sizes();
  const std::vector<int64_t> out = graph.value(node.outputs[0]).shape.sizes();
  const std::vector<int64_t> w = graph.value(node.inputs[1]).shape.sizes();
  std::vector<int64_t> pads = node.ints_attribute("pads");
  const std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  conv_detail::ConvProblem p;
  p.batch = in[0];
  p.channels_in = w[1];
  p.channels_out = w[0];
  p.kernel = {3, 3};
  p.strides = {1, 1};
  p.dilations = {1, 1};
  for (int i = 0; i < 2; ++i) {
    const int64_t total = out[2 + i] + 2 - in[2 + i];
    const int64_t begin = pads.size() == 4 && (auto_pad == "NOTSET" || auto_pad.empty())
                              ? pads[i]
                              : (auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2);
    p.pads_begin.push_back(begin);
    p.pads_end.push_back(total - begin);
  }
  p.output_shape = out;
  const bool bias = node.inputs.size() > 2 && node.inputs[2] != kNoValue;
  const std::vector<int64_t> key = {in[0],  in[1],  in[2],           in[3],           w[0],
                                    out[2], out[3], p.pads_begin[0], p.pads_begin[1], bias};
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, WinogradBytes> known;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto found = known.find(key); found != known.end()) return found->second;
  }
  using dnnl::memory;
  p.user_weights =
      memory::desc({w[0], w[1], 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  WinogradBytes bytes;
  try {
    const memory::desc src({in[0], in[1], in[2], in[3]}, memory::data_type::f32,
                           memory::format_tag::any);
    const memory::desc dst({out[0], out[1], out[2], out[3]}, memory::data_type::f32,
                           memory::format_tag::any);
    const auto descriptor = conv_detail::make_descriptor<dnnl::convolution_forward>(
        p, src, dst, bias, kernel_attr(), engine, /*winograd=*/true);
    bytes.weights = static_cast<double>(descriptor.weights_desc().get_size());
    bytes.scratchpad = static_cast<double>(descriptor.scratchpad_desc().get_size());
  } catch (const dnnl::error&) {
    // No Winograd kernel for this problem: the family runs it direct anyway.
  }
  const std::lock_guard<std::mutex> lock(mutex);
  known[key] = bytes;
  return bytes;
}

// Every weight's candidate, in the order of its first reader; the Winograd-shaped readers whose
// maps are too small for it to pay go to `small_maps` instead.
std::vector<WinogradCandidate> candidates_of(const Graph& graph, const WinogradKernel& kernel,
                                             int threads, std::vector<NodeId>& small_maps) {
  const conv_detail::WinogradRun run = winograd_run(threads, kernel);
  // A weight that a small map's reader holds packed for the direct kernel anyway gains the
  // whole Winograd copy from its other readers, not only what that copy adds to the plain one.
  std::set<ValueId> read_direct;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (winograd_shaped(graph, node) && !winograd_map_pays(graph, node, run)) {
      small_maps.push_back(id);
      read_direct.insert(node.inputs[1]);
    }
  }
  std::vector<WinogradCandidate> candidates;
  std::map<ValueId, std::size_t> index;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (!winograd_shaped(graph, node) || !winograd_map_pays(graph, node, run)) continue;
    const std::vector<int64_t> w = graph.value(node.inputs[1]).shape.sizes();
    const double plain = static_cast<double>(w[0] * w[1] * 9) * sizeof(float);
    const double held_anyway = read_direct.count(node.inputs[1]) ? 0.0 : plain;
    const Shape& out = graph.value(node.outputs[0]).shape;
    double extra = kernel.weight_factor * plain - held_anyway;
    double scratchpad = 0;
    if (kernel.ask_onednn) {
      if (!out.is_static() || !graph.value(node.inputs[0]).shape.is_static()) continue;
      const WinogradBytes bytes = onednn_winograd_bytes(graph, node);
      if (bytes.weights == 0) continue;
      extra = std::max(0.0, bytes.weights - held_anyway);
      scratchpad = bytes.scratchpad;
    }
    auto [at, added] = index.emplace(node.inputs[1], candidates.size());
    if (added) candidates.emplace_back().weight = node.inputs[1];
    WinogradCandidate& c = candidates[at->second];
    // Readers whose layouts differ hold copies of their own; the largest is the least extra.
    c.extra_bytes = std::max(c.extra_bytes, extra);
    c.scratchpad_bytes = std::max(c.scratchpad_bytes, scratchpad);
    c.nodes.push_back(id);
    // The direct kernel: 2 x 9 x C_in flops per output.
    if (out.is_static()) {
      c.saved_flops += 2.0 * 9.0 * static_cast<double>(out.element_count()) *
                       static_cast<double>(w[1]) * kernel.saved_fraction;
    }
  }
  return candidates;
}

double plain_weight_bytes(const Graph& graph) {
  double bytes = 0;
  for (ValueId id : graph.initializers()) {
    const Value& value = graph.value(id);
    if (!value.initializer || value.initializer->dtype == DataType::kString) continue;
    bytes += static_cast<double>(value.initializer->element_count()) *
             static_cast<double>(element_size(value.initializer->dtype));
  }
  return bytes;
}

}  // namespace

double WinogradSelection::kept_bytes() const {
  double bytes = 0;
  for (const WinogradCandidate& c : kept) bytes += c.extra_bytes;
  return bytes;
}

double WinogradSelection::kept_scratchpad_bytes() const {
  double bytes = 0;
  for (const WinogradCandidate& c : kept) bytes = std::max(bytes, c.scratchpad_bytes);
  return bytes;
}

double WinogradSelection::saved_bytes() const {
  double bytes = 0;
  for (const WinogradCandidate& c : direct) bytes += c.extra_bytes;
  return bytes;
}

bool WinogradSelection::runs_direct(NodeId node) const {
  if (std::find(small_maps.begin(), small_maps.end(), node) != small_maps.end()) return true;
  return std::any_of(direct.begin(), direct.end(), [&](const WinogradCandidate& c) {
    return std::find(c.nodes.begin(), c.nodes.end(), node) != c.nodes.end();
  });
}

WinogradBudget parse_winograd_budget(const std::string& text, const std::string& origin) {
  WinogradBudget budget;
  if (text == "none") {
    budget.fraction = std::nullopt;
    return budget;
  }
  char* end = nullptr;
  const double fraction = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(fraction) ||
      fraction < 0) {
    throw Error(fmt::format(
        "{}: '{}' is no Winograd weight budget: expected a fraction of the model's weight "
        "bytes (0 or more, e.g. 0.5) or \"none\"",
        origin, text));
  }
  // A fraction asked for is that fraction: the floor is the default's, for small models.
  budget.fraction = fraction;
  budget.floor_bytes = 0;
  budget.applies_above = 0;
  return budget;
}

WinogradBudget winograd_budget_from_environment() {
  const char* text = std::getenv("CLEAVE_WINOGRAD_BUDGET");
  if (!text) return WinogradBudget{};
  return parse_winograd_budget(text, "CLEAVE_WINOGRAD_BUDGET");
}

std::string winograd_budget_key(const WinogradBudget& budget) {
  if (!budget.fraction) return "wbnone";
  return fmt::format("wb{}-{}-{}", *budget.fraction, budget.floor_bytes / kMiB,
                     budget.applies_above);
}

std::string winograd_family_key() {
  using namespace conv_detail;
  return fmt::format("{}-m{}-{}-{}-t{}-{}-o{}-{}",
                     winograd_budget_key(winograd_budget_from_environment()),
                     kWinogradSmallMapPixels, kWinogradSmallMapDirectMacs, kWinogradTinyMapPixels,
                     kWinogradTeamMapPixels, kWinogradTeamDirectMacsBelow,
                     kOwnWinogradWideMapPixels, kOwnWinogradWideChannels);
}

WinogradKernel winograd_kernel_here() {
  if (isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core)) return {4.0, 0.75, true, false};
  return {16.0 / 9.0, 5.0 / 9.0, false, true};
}

conv_detail::WinogradRun winograd_run(int threads, const WinogradKernel& kernel) {
  return {threads, kernel.own};
}

WinogradSelection select_winograd(const Graph& graph, const WinogradBudget& budget, int threads,
                                  const WinogradKernel& kernel) {
  WinogradSelection selection;
  selection.budget = budget;
  selection.plain_weight_bytes = plain_weight_bytes(graph);
  selection.budget_bytes =
      budget.fraction
          ? std::max(*budget.fraction * selection.plain_weight_bytes, budget.floor_bytes)
          : std::numeric_limits<double>::infinity();
  std::vector<WinogradCandidate> candidates =
      candidates_of(graph, kernel, threads, selection.small_maps);
  double all_extra = 0;
  for (const WinogradCandidate& c : candidates) all_extra += c.extra_bytes;
  if (all_extra <= budget.applies_above * selection.plain_weight_bytes)
    selection.budget_bytes = std::numeric_limits<double>::infinity();
  // Most flops saved per extra byte first; equal ones in node order, so the answer is stable.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const WinogradCandidate& a, const WinogradCandidate& b) {
                     return a.saved_flops * b.extra_bytes > b.saved_flops * a.extra_bytes;
                   });
  double used = 0;
  for (const WinogradCandidate& c : candidates) {
    if (used + c.extra_bytes <= selection.budget_bytes) {
      used += c.extra_bytes;
      selection.kept.push_back(c);
    } else {
      selection.direct.push_back(c);
    }
  }
  return selection;
}

bool winograd_map_pays(const Graph& graph, const Node& node, const conv_detail::WinogradRun& run) {
  if (node.outputs.empty() || node.inputs.size() < 2 || node.inputs[1] == kNoValue) return true;
  const Shape& out = graph.value(node.outputs[0]).shape;
  const Shape& w = graph.value(node.inputs[1]).shape;
  if (out.rank() != 4 || w.rank() != 4) return true;
  return conv_detail::winograd_pays(out.dims[2].size, out.dims[3].size, w.dims[1].size,
                                    w.dims[0].size, run);
}

bool winograd_over_budget(const Graph& graph, NodeId node, int threads) {
  return select_winograd(graph, winograd_budget_from_environment(), threads).runs_direct(node);
}

namespace {

std::string describe_kept(const WinogradSelection& selection) {
  auto count = [](const std::vector<WinogradCandidate>& list) {
    std::size_t nodes = 0;
    for (const WinogradCandidate& c : list) nodes += c.nodes.size();
    return nodes;
  };
  const std::size_t total = count(selection.kept) + count(selection.direct);
  const std::string small =
      selection.small_maps.empty()
          ? std::string()
          : fmt::format("; {} more on small maps run direct", selection.small_maps.size());
  if (!selection.budget.fraction) {
    return fmt::format("no budget: all {} 3x3 convolutions keep Winograd ({:.1f} MiB added){}",
                       total, selection.kept_bytes() / kMiB, small);
  }
  if (std::isinf(selection.budget_bytes)) {
    return fmt::format(
        "all {} 3x3 convolutions keep Winograd: {:.1f} MiB added, not over {} x {:.1f} MiB of "
        "weights, where the budget starts to apply{}",
        total, selection.kept_bytes() / kMiB, selection.budget.applies_above,
        selection.plain_weight_bytes / kMiB, small);
  }
  return fmt::format(
      "{} of {} 3x3 convolutions run direct: {:.1f} MiB of Winograd weights saved, {:.1f} MiB "
      "added (budget {:.1f} MiB: {} x {:.1f} MiB of weights, at least {:.1f} MiB){}",
      count(selection.direct), total, selection.saved_bytes() / kMiB, selection.kept_bytes() / kMiB,
      selection.budget_bytes / kMiB, *selection.budget.fraction,
      selection.plain_weight_bytes / kMiB, selection.budget.floor_bytes / kMiB, small);
}

}  // namespace

std::string describe(const WinogradSelection& selection) {
  const double scratchpad = selection.kept_scratchpad_bytes();
  if (scratchpad == 0) return describe_kept(selection);
  return fmt::format("{}; the largest scratchpad of those kept {:.1f} MiB",
                     describe_kept(selection), scratchpad / kMiB);
}

std::vector<std::string> direct_node_names(const Graph& graph, const WinogradSelection& selection) {
  std::vector<NodeId> nodes = selection.small_maps;
  for (const WinogradCandidate& c : selection.direct)
    nodes.insert(nodes.end(), c.nodes.begin(), c.nodes.end());
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> names;
  for (NodeId id : nodes) names.push_back(graph.node(id).name);
  return names;
}

}  // namespace cleave
