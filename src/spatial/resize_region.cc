// Resize/Upsample along H and W: coordinates as the kernel computes them, aligned slices.
#include "spatial/resize_region.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace cleave {

namespace {

using Transform = ResizeAxis::Transform;
using Rounding = ResizeAxis::Rounding;

// The input coordinate of output row x, by the kernel's own formula: the rows a slice reads
// must be the rows the kernel picks, to the last rounding.
float coordinate(const ResizeAxis& a, int64_t row) {
  return resize_source_coordinate(a.transform, static_cast<float>(row), {a.in, a.scale, a.resized});
}

// First and last input row output row `row` reads.
Interval taps(const ResizeAxis& a, int64_t row) {
  float x = coordinate(a, row);
  x = std::isnan(x) ? 0.0f : std::clamp(x, -3.0f, static_cast<float>(a.in + 2));
  const int64_t last = a.in - 1;
  if (!a.linear) {
    const int64_t i =
        std::clamp<int64_t>(resize_nearest_index(a.rounding, x, a.scale < 1), 0, last);
    return {i, i + 1};
  }
  x = std::clamp(x, 0.0f, static_cast<float>(last));
  const int64_t low = std::min(static_cast<int64_t>(x), last);
  return {low, std::min(low + 1, last) + 1};
}

// Smallest q <= 64 with scale = p / q exactly as a float, and that p.
std::optional<std::pair<int64_t, int64_t>> ratio_of(float scale) {
  for (int64_t q = 1; q <= 64; ++q) {
    const double p = std::round(static_cast<double>(scale) * static_cast<double>(q));
    if (p >= 1 && static_cast<float>(p / static_cast<double>(q)) == scale)
      return std::make_pair(static_cast<int64_t>(p), q);
  }
  return std::nullopt;
}

bool transform_of(const std::string& text, Transform& t) {
  if (text == "half_pixel") {
    t = Transform::kHalfPixel;
  } else if (text == "pytorch_half_pixel") {
    t = Transform::kPytorchHalfPixel;
  } else if (text == "asymmetric") {
    t = Transform::kAsymmetric;
  } else if (text == "align_corners") {
    t = Transform::kAlignCorners;
  } else if (text == "tf_half_pixel_for_nn") {
    t = Transform::kTfHalfPixelForNn;
  } else {
    return false;
  }
  return true;
}

std::optional<Rounding> rounding_of(const std::string& text) {
  if (text == "round_prefer_floor") return Rounding::kRoundPreferFloor;
  if (text == "round_prefer_ceil") return Rounding::kRoundPreferCeil;
  if (text == "floor") return Rounding::kFloor;
  if (text == "ceil") return Rounding::kCeil;
  return std::nullopt;
}

RegionMap refuse(std::string reason) {
  RegionMap r;
  r.reason = std::move(reason);
  return r;
}

// A constant input's values as doubles (float or int64), or nullopt.
std::optional<std::vector<double>> constant_values(const Graph& graph, const Node& n,
                                                   std::size_t slot) {
  if (slot >= n.inputs.size() || n.inputs[slot] == kNoValue) return std::vector<double>{};
  const Value& v = graph.value(n.inputs[slot]);
  if (!v.initializer || !v.initializer->has_data()) return std::nullopt;
  std::vector<double> out;
  if (v.initializer->dtype == DataType::kFloat) {
    for (float f : v.initializer->as<float>()) out.push_back(f);
  } else if (v.initializer->dtype == DataType::kInt64) {
    for (int64_t i : v.initializer->as<int64_t>()) out.push_back(static_cast<double>(i));
  } else {
    return std::nullopt;
  }
  return out;
}

}  // namespace

Interval resize_rows_read(const ResizeAxis& axis, const Interval& rows) {
  if (rows.empty()) return {};
  // The coordinate grows with the row and rounding keeps order: the first and last rows bound.
  return {taps(axis, rows.begin).begin, taps(axis, rows.end - 1).end};
}

std::optional<ResizeAxisPlan> plan_resize_axis(const ResizeAxis& axis, bool by_sizes,
                                               const Interval& rows, std::string& why) {
  const Interval need = resize_rows_read(axis, rows);
  const bool corners = axis.transform == Transform::kAlignCorners;
  // One step of the grids: q input rows make p output rows, from any multiple of q.
  int64_t p = 0, q = 0;
  if (by_sizes) {
    const int64_t in = corners ? axis.in - 1 : axis.in, out = corners ? axis.out - 1 : axis.out;
    if (in < 1 || out < 1) {
      why = "a Resize of one row is not split along it";
      return std::nullopt;
    }
    const int64_t g = std::gcd(in, out);
    q = in / g;
    p = out / g;
  } else {
    auto r = ratio_of(axis.scale);
    if (!r) {
      why = "scale " + std::to_string(axis.scale) + " is not a ratio of small whole numbers";
      return std::nullopt;
    }
    std::tie(p, q) = *r;
  }
  ResizeAxisPlan plan;
  // The slice starts at a step at or before both the first row it reads and the step of its
  // first output row (rounding up can read a row past that step).
  const int64_t lo = std::min(need.begin / q, rows.begin / p) * q;
  const int64_t first = lo / q * p;  // the output row of input row lo
  int64_t hi = need.end, length = 0;
  if (by_sizes) {
    // Whole steps: the slice's sizes keep the ratio exactly (q rows in, p out).
    const int64_t start = corners ? 1 : 0;  // align_corners: steps between first and last rows
    int64_t k = std::max<int64_t>(1, (need.end - start - lo + q - 1) / q);
    k = std::max(k, (rows.end - start - first + p - 1) / p);
    if (axis.transform == Transform::kPytorchHalfPixel) k = std::max(k, (2 + p - 1) / p);
    hi = std::min(axis.in, lo + k * q + start);
    length = (hi - start - lo) / q * p + start;
    if (hi == axis.in) length = axis.out - first;
  } else {
    // The same scale: the slice's length is floor(scale x its rows), as the kernel takes it.
    auto local = [&](int64_t h) {
      return static_cast<int64_t>(axis.scale * static_cast<float>(h - lo));
    };
    while (hi < axis.in && (local(hi) < rows.end - first || axis.scale * float(hi - lo) <= 1)) ++hi;
    length = local(hi);
  }
  plan.read = {lo, hi};
  plan.computed = {first, first + length};
  if (!plan.computed.contains(rows) || plan.computed.end > axis.out) {
    why = "the slice's rows do not cover the output rows";
    return std::nullopt;
  }
  if (2 * q > axis.in && plan.read == Interval{0, axis.in} && need != plan.read) {
    why = "input and output rows line up only every " + std::to_string(q) + " input rows (" +
          std::to_string(axis.in) + " to " + std::to_string(axis.out) + ")";
    return std::nullopt;
  }
  return plan;
}

RegionMap resize_region(const Graph& graph, const Node& n, const std::vector<int64_t>& os,
                        const Box& out) {
  auto xs = static_sizes(graph, n.inputs[0]);
  if (!xs || xs->size() != 4) return refuse(n.op_type + " of an input of unknown shape");
  const int64_t opset = graph.opset_imports.count("") ? graph.opset_imports.at("") : 17;
  const bool legacy = n.op_type == "Upsample" || opset < 11;
  const bool linear = n.string_attribute("mode", "nearest") != "nearest";
  if (linear && n.string_attribute("mode", "nearest") != "linear" &&
      n.string_attribute("mode", "nearest") != "bilinear")
    return refuse(n.op_type + " mode " + n.string_attribute("mode", "") + " is split only along C");
  ResizeAxis base;
  base.linear = linear;
  std::vector<double> scales, sizes;
  std::size_t scales_slot = 1, sizes_slot = 3;
  if (legacy) {
    base.transform = Transform::kAsymmetric;
    base.rounding = Rounding::kSimple;
    if (n.op_type == "Upsample" && opset < 9) {
      if (const Attribute* a = n.attribute("scales"))
        scales.assign(a->floats.begin(), a->floats.end());
    } else {
      auto s = constant_values(graph, n, 1);
      if (!s) return refuse(n.op_type + "'s scales are not a constant");
      scales = *s;
    }
  } else {
    scales_slot = 2;
    if (!transform_of(n.string_attribute("coordinate_transformation_mode", "half_pixel"),
                      base.transform))
      return refuse("coordinate_transformation_mode " +
                    n.string_attribute("coordinate_transformation_mode", "") +
                    " is split only along C");
    auto rounding = rounding_of(n.string_attribute("nearest_mode", "round_prefer_floor"));
    if (!rounding) return refuse("an unknown nearest_mode");
    base.rounding = *rounding;
    auto s = constant_values(graph, n, 2);
    auto z = constant_values(graph, n, 3);
    if (!s || !z) return refuse("Resize's scales or sizes are not constants");
    scales = *s;
    sizes = *z;
    if (n.int_attribute("antialias", 0) != 0 || n.attribute("axes"))
      return refuse("Resize with antialias or axes is split only along C");
  }
  const bool given_sizes = !sizes.empty();
  if (!given_sizes && scales.size() != 4) return refuse(n.op_type + " without 4 scales");
  const bool by_sizes = given_sizes || base.transform == Transform::kAlignCorners;
  if (by_sizes && legacy) return refuse("align_corners needs opset 11");

  RegionMap r;
  r.ok = true;
  Box x(4), computed = out;
  for (int d = 0; d < 4; ++d) {
    ResizeAxis a = base;
    a.in = (*xs)[d];
    a.out = os[d];
    if (given_sizes) {
      a.scale = static_cast<float>(a.out) / static_cast<float>(a.in);
      a.resized = static_cast<float>(a.out);
    } else {
      a.scale = static_cast<float>(scales[d]);
      a.resized = a.scale * static_cast<float>(a.in);
    }
    const bool full = out[d].begin == 0 && out[d].end == os[d];
    if (full) {
      x[d] = {0, a.in};
      continue;
    }
    if (d < 2) {
      if (a.in != a.out) return refuse(n.op_type + " that scales axis " + std::to_string(d));
      x[d] = out[d];
      continue;
    }
    if (base.transform == Transform::kAlignCorners && a.resized != static_cast<float>(a.out))
      return refuse("align_corners with a scale that does not give whole rows");
    std::string why;
    auto plan = plan_resize_axis(a, by_sizes, out[d], why);
    if (!plan) return refuse(n.op_type + " along " + (d == 2 ? "H" : "W") + ": " + why);
    x[d] = plan->read;
    computed[d] = plan->computed;
  }
  r.inputs.push_back(x);
  for (std::size_t i = 1; i < n.inputs.size(); ++i) {
    auto s = static_sizes(graph, n.inputs[i]);
    r.inputs.push_back(n.inputs[i] == kNoValue || !s ? std::nullopt
                                                     : std::optional<Box>(full_box(*s)));
  }
  if (computed != out) r.computed = computed;
  if (by_sizes) {
    // The slice states its length, so the ratio it uses is its own rows' (the same grid).
    std::vector<int64_t> local = box_sizes(computed);
    r.constant_inputs[static_cast<int>(scales_slot)] =
        TensorData::from<float>(DataType::kFloat, {0}, std::vector<float>{});
    r.constant_inputs[static_cast<int>(sizes_slot)] =
        TensorData::from<int64_t>(DataType::kInt64, {4}, local);
  }
  return r;
}

}  // namespace cleave
