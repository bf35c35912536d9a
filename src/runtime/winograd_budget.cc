// The Winograd family's weight budget: which 3x3 convolutions keep Winograd (winograd_budget.h).
#include "runtime/winograd_budget.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "runtime/cpu_isa.h"
#include "support/error.h"

namespace cleave {

namespace {

constexpr double kMiB = 1 << 20;

bool all_ones(const Node& node, std::string_view key) {
  const std::vector<int64_t> values = node.ints_attribute(key);
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v == 1; });
}

// Whether `node` is a Conv oneDNN's Winograd takes (winograd_shape) whose weights are packed
// once at preparation (an initializer).
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

// Every weight's candidate, in the order of its first reader.
std::vector<WinogradCandidate> candidates_of(const Graph& graph, const WinogradKernel& kernel) {
  std::vector<WinogradCandidate> candidates;
  std::map<ValueId, std::size_t> index;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (!winograd_shaped(graph, node)) continue;
    const std::vector<int64_t> w = graph.value(node.inputs[1]).shape.sizes();
    auto [at, added] = index.emplace(node.inputs[1], candidates.size());
    if (added) {
      WinogradCandidate& c = candidates.emplace_back();
      c.weight = node.inputs[1];
      const double plain = static_cast<double>(w[0] * w[1] * 9) * sizeof(float);
      c.extra_bytes = (kernel.weight_factor - 1) * plain;
    }
    WinogradCandidate& c = candidates[at->second];
    c.nodes.push_back(id);
    const Shape& out = graph.value(node.outputs[0]).shape;
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

double WinogradSelection::saved_bytes() const {
  double bytes = 0;
  for (const WinogradCandidate& c : direct) bytes += c.extra_bytes;
  return bytes;
}

bool WinogradSelection::runs_direct(NodeId node) const {
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
  return budget;
}

WinogradBudget winograd_budget_from_environment() {
  const char* text = std::getenv("CLEAVE_WINOGRAD_BUDGET");
  if (!text) return WinogradBudget{};
  return parse_winograd_budget(text, "CLEAVE_WINOGRAD_BUDGET");
}

std::string winograd_budget_key(const WinogradBudget& budget) {
  if (!budget.fraction) return "wbnone";
  return fmt::format("wb{}-{}", *budget.fraction, budget.floor_bytes / kMiB);
}

WinogradKernel winograd_kernel_here() {
  if (isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core)) return {4.0, 0.75};
  return {16.0 / 9.0, 5.0 / 9.0};
}

WinogradSelection select_winograd(const Graph& graph, const WinogradBudget& budget,
                                  const WinogradKernel& kernel) {
  WinogradSelection selection;
  selection.budget = budget;
  selection.plain_weight_bytes = plain_weight_bytes(graph);
  selection.budget_bytes =
      budget.fraction
          ? std::max(*budget.fraction * selection.plain_weight_bytes, budget.floor_bytes)
          : std::numeric_limits<double>::infinity();
  std::vector<WinogradCandidate> candidates = candidates_of(graph, kernel);
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

bool winograd_over_budget(const Graph& graph, NodeId node) {
  return select_winograd(graph, winograd_budget_from_environment()).runs_direct(node);
}

std::string describe(const WinogradSelection& selection) {
  auto count = [](const std::vector<WinogradCandidate>& list) {
    std::size_t nodes = 0;
    for (const WinogradCandidate& c : list) nodes += c.nodes.size();
    return nodes;
  };
  const std::size_t total = count(selection.kept) + count(selection.direct);
  if (!selection.budget.fraction) {
    return fmt::format("no budget: all {} 3x3 convolutions keep Winograd ({:.1f} MiB added)", total,
                       selection.kept_bytes() / kMiB);
  }
  return fmt::format(
      "{} of {} 3x3 convolutions run direct: {:.1f} MiB of Winograd weights saved, {:.1f} MiB "
      "added (budget {:.1f} MiB: {} x {:.1f} MiB of weights, at least {:.1f} MiB)",
      count(selection.direct), total, selection.saved_bytes() / kMiB, selection.kept_bytes() / kMiB,
      selection.budget_bytes / kMiB, *selection.budget.fraction,
      selection.plain_weight_bytes / kMiB, selection.budget.floor_bytes / kMiB);
}

std::vector<std::string> direct_node_names(const Graph& graph, const WinogradSelection& selection) {
  std::vector<NodeId> nodes;
  for (const WinogradCandidate& c : selection.direct)
    nodes.insert(nodes.end(), c.nodes.begin(), c.nodes.end());
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> names;
  for (NodeId id : nodes) names.push_back(graph.node(id).name);
  return names;
}

}  // namespace cleave
