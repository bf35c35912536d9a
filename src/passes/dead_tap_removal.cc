// Dead-tap removal: a Conv's kernel shrinks to the taps that read its input somewhere.
#include "passes/dead_tap_removal.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "passes/deferred_weights.h"

namespace cleave {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// One spatial dim of a convolution: what it reads and where its taps fall.
struct AxisWindow {
  int64_t input = 0, kernel = 0, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;

  int64_t outputs() const {
    return floor_div(input + pad_begin + pad_end - dilation * (kernel - 1) - 1, stride) + 1;
  }
  // Whether tap `i` reads an input position (not padding) for some output position.
  bool live(int64_t i) const {
    const int64_t shift = i * dilation - pad_begin;  // input index = o * stride + shift
    const int64_t first = std::max<int64_t>(0, ceil_div(-shift, stride));
    const int64_t last = std::min(outputs() - 1, floor_div(input - 1 - shift, stride));
    return first <= last;
  }
};

// The window with its dead outer taps cut, or nullopt when none can go (or the cut would
// need negative pads). `first` is the first kept tap.
std::optional<AxisWindow> shrunk(const AxisWindow& w, int64_t& first) {
  const int64_t out = w.outputs();
  if (out <= 0) return std::nullopt;
  int64_t lo = 0, hi = w.kernel - 1;
  while (lo <= hi && !w.live(lo)) ++lo;
  while (hi >= lo && !w.live(hi)) --hi;
  // Every tap dead (output is the bias alone) is left to the kernel as it is.
  if (lo > hi || (lo == 0 && hi == w.kernel - 1)) return std::nullopt;
  AxisWindow s = w;
  s.kernel = hi - lo + 1;
  s.dilation = s.kernel == 1 ? 1 : w.dilation;
  s.pad_begin = w.pad_begin - lo * w.dilation;
  if (s.pad_begin < 0) return std::nullopt;
  // The end pad that keeps the output size; reading fewer trailing rows than the input has
  // is what a zero pad with a floor division already does.
  s.pad_end = std::max<int64_t>(
      0, (out - 1) * s.stride + s.dilation * (s.kernel - 1) + 1 - s.input - s.pad_begin);
  if (s.outputs() != out) return std::nullopt;
  first = lo;
  return s;
}

// Copies the weights' taps [first[a], first[a] + kernel[a]) along each spatial axis a.
std::vector<float> slice_taps(std::span<const float> weights, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& first,
                              const std::vector<int64_t>& kernel) {
  const std::size_t spatial = first.size();
  int64_t outer = dims[0] * dims[1];
  int64_t kept = 1, whole = 1;
  for (std::size_t a = 0; a < spatial; ++a) {
    kept *= kernel[a];
    whole *= dims[a + 2];
  }
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(outer * kept));
  std::vector<int64_t> index(spatial, 0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < kept; ++k) {
      int64_t rest = k, offset = 0;
      for (std::size_t a = spatial; a-- > 0;) {
        index[a] = rest % kernel[a];
        rest /= kernel[a];
      }
      for (std::size_t a = 0; a < spatial; ++a) offset = offset * dims[a + 2] + first[a] + index[a];
      out.push_back(weights[static_cast<std::size_t>(o * whole + offset)]);
    }
  }
  return out;
}

bool try_shrink(Graph& graph, NodeId id) {
  const Node& conv = graph.node(id);
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 ||
      conv.inputs[0] == kNoValue || conv.inputs[1] == kNoValue) {
    return false;
  }
  const std::string auto_pad = conv.string_attribute("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && !auto_pad.empty()) return false;
  if (!is_unread_weight(graph, conv.inputs[1]) && !is_constant(graph, conv.inputs[1])) return false;
  const TensorData& weights = *graph.value(conv.inputs[1]).initializer;
  if (weights.dtype != DataType::kFloat || weights.dims.size() < 3) return false;
  const Shape& x = graph.value(conv.inputs[0]).shape;
  const std::size_t spatial = weights.dims.size() - 2;
  if (x.rank() != spatial + 2) return false;
  std::vector<int64_t> strides = conv.ints_attribute("strides");
  std::vector<int64_t> dilations = conv.ints_attribute("dilations");
  std::vector<int64_t> pads = conv.ints_attribute("pads");
  if (strides.empty()) strides.assign(spatial, 1);
  if (dilations.empty()) dilations.assign(spatial, 1);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    return false;
  std::vector<int64_t> first(spatial, 0), kernel(spatial, 0);
  bool changed = false;
  for (std::size_t a = 0; a < spatial; ++a) {
    const Dim& dim = x.dims[a + 2];
    AxisWindow w{dim.size, weights.dims[a + 2], strides[a], dilations[a],
                 pads[a],  pads[spatial + a]};
    kernel[a] = w.kernel;
    // Sizes beyond these are refused by the kernel anyway; they keep the products below in
    // range for hostile attributes.
    constexpr int64_t kLimit = int64_t{1} << 30;
    if (!dim.is_known() || w.input <= 0 || w.input > kLimit || w.kernel > kLimit || w.stride <= 0 ||
        w.stride > kLimit || w.dilation <= 0 || w.dilation > kLimit || w.pad_begin < 0 ||
        w.pad_begin > kLimit || w.pad_end < 0 || w.pad_end > kLimit) {
      continue;
    }
    int64_t lo = 0;
    std::optional<AxisWindow> s = shrunk(w, lo);
    if (!s) continue;
    first[a] = lo;
    kernel[a] = s->kernel;
    dilations[a] = s->dilation;
    pads[a] = s->pad_begin;
    pads[spatial + a] = s->pad_end;
    changed = true;
  }
  if (!changed) return false;
  const bool unread = !weights.has_data();  // Planning from sizes: the live taps' sizes only.
  if (!unread && static_cast<int64_t>(weights.as<float>().size()) != weights.element_count())
    return false;
  std::vector<int64_t> dims = weights.dims;
  for (std::size_t a = 0; a < spatial; ++a) dims[a + 2] = kernel[a];
  // The same slice, made now or, planning, when the fingerprint hashes it.
  const WeightRewrite live_taps = [first, kernel, dims](const std::vector<TensorData>& inputs) {
    return TensorData::from(DataType::kFloat, dims,
                            slice_taps(inputs[0].as<float>(), inputs[0].dims, first, kernel));
  };
  std::shared_ptr<const DeferredRewrite> deferred =
      unread ? defer_rewrite(graph, {conv.inputs[1]}, live_taps) : nullptr;
  TensorData sliced = unread ? TensorData{DataType::kFloat, dims, {}, {}}
                             : live_taps({*graph.value(conv.inputs[1]).initializer});
  const std::string name = graph.value(conv.inputs[1]).name + "_live_taps";
  Node& node = graph.node(id);
  if (node.attribute("kernel_shape"))
    node.set_attribute("kernel_shape", Attribute::of_ints(kernel));
  node.set_attribute("dilations", Attribute::of_ints(dilations));
  node.set_attribute("pads", Attribute::of_ints(pads));
  set_constant_input(graph, id, 1, std::move(sliced), name);
  if (deferred) record_deferred_weight(graph, graph.node(id).inputs[1], std::move(deferred));
  return true;
}

}  // namespace

PassResult remove_dead_taps(Graph& graph) {
  PassResult result{"dead-tap removal", {}, {}};
  for (NodeId id : graph.topological_order()) {
    if (try_shrink(graph, id)) result.add("Conv kernels shrunk");
  }
  return result;
}

}  // namespace cleave
