// The PyTorch op table's Resize and Upsample: the forms F.interpolate computes as ONNX does.
#include <cmath>

#include "codegen/pytorch_call.h"
#include "runtime/kernels/tensor/resize_coordinates.h"

namespace cleave::pytorch_detail {

namespace {

// A float constant input's values, or nullopt.
std::optional<std::vector<double>> const_floats(const Call& c, std::size_t i) {
  if (!c.has(i)) return std::nullopt;
  const Value& v = c.input_value(i);
  if (!v.initializer || !v.initializer->bytes) return std::nullopt;
  std::vector<double> values;
  if (v.initializer->dtype == DataType::kFloat) {
    for (float x : v.initializer->as<float>()) values.push_back(x);
  } else if (v.initializer->dtype == DataType::kDouble) {
    for (double x : v.initializer->as<double>()) values.push_back(x);
  } else {
    return std::nullopt;
  }
  return values;
}

// What the node asks for, in the terms of cleave's Resize kernel.
struct ResizeForm {
  std::string mode, transform_name, rounding_name;
  ResizeTransform transform = ResizeTransform::kHalfPixel;
  ResizeRounding rounding = ResizeRounding::kRoundPreferFloor;
  std::vector<ResizeAxisCoordinates> axes;  // The spatial axes (2 onwards).
  std::vector<int64_t> out;                 // Their output sizes.
  std::vector<double> scales;               // Their given scales; empty when sizes are given.
};

ResizeTransform parse_transform(const Call& c, const std::string& name) {
  static const std::map<std::string, ResizeTransform> names = {
      {"half_pixel", ResizeTransform::kHalfPixel},
      {"pytorch_half_pixel", ResizeTransform::kPytorchHalfPixel},
      {"align_corners", ResizeTransform::kAlignCorners},
      {"asymmetric", ResizeTransform::kAsymmetric},
      {"tf_half_pixel_for_nn", ResizeTransform::kTfHalfPixelForNn}};
  auto it = names.find(name);
  if (it == names.end()) c.fail(fmt::format("coordinate_transformation_mode '{}'", name));
  return it->second;
}

ResizeRounding parse_rounding(const Call& c, const std::string& name) {
  static const std::map<std::string, ResizeRounding> names = {
      {"round_prefer_floor", ResizeRounding::kRoundPreferFloor},
      {"round_prefer_ceil", ResizeRounding::kRoundPreferCeil},
      {"floor", ResizeRounding::kFloor},
      {"ceil", ResizeRounding::kCeil}};
  auto it = names.find(name);
  if (it == names.end()) c.fail(fmt::format("nearest_mode '{}'", name));
  return it->second;
}

// The node's mode, coordinates and per-axis sizes; refuses what F.interpolate cannot express
// whatever the coordinates (batch or channel resizing, Resize-18's extra attributes).
ResizeForm resize_form(const Call& c) {
  const auto in = c.shape_in(0);
  const auto out = c.shape_out();
  if (in.size() < 3 || in.size() > 5)
    c.fail(fmt::format("a rank-{} input (3 to 5 map)", in.size()));
  ResizeForm form;
  form.mode = c.node.string_attribute("mode", "nearest");
  // Upsample and Resize-10 had no coordinate modes: asymmetric, truncating when enlarging.
  const bool legacy = c.node.op_type == "Upsample" || !opset_at_least(c, 11);
  std::optional<std::vector<double>> scales;
  if (legacy) {
    form.transform = ResizeTransform::kAsymmetric;
    form.rounding = ResizeRounding::kSimple;
    form.transform_name = "asymmetric";
    form.rounding_name = "Upsample's";
    if (const Attribute* attribute = c.node.attribute("scales")) {
      scales = std::vector<double>(attribute->floats.begin(), attribute->floats.end());
    } else {
      scales = const_floats(c, 1);
    }
  } else {
    if (c.node.int_attribute("antialias", 0) != 0 || c.node.attribute("axes") ||
        c.node.string_attribute("keep_aspect_ratio_policy", "stretch") != "stretch") {
      c.fail("antialias, axes or keep_aspect_ratio_policy");
    }
    form.transform_name = c.node.string_attribute("coordinate_transformation_mode", "half_pixel");
    form.rounding_name = c.node.string_attribute("nearest_mode", "round_prefer_floor");
    form.transform = parse_transform(c, form.transform_name);
    form.rounding = parse_rounding(c, form.rounding_name);
    const bool sizes = c.has(3) && c.elements_in(3) > 0;
    if (!sizes) scales = const_floats(c, 2);
  }
  if (scales && scales->size() != in.size()) c.fail("scales of the wrong length");
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (d < 2) {
      if (in[d] != out[d] || (scales && (*scales)[d] != 1.0))
        c.fail(fmt::format("resizing axis {} (F.interpolate resizes spatial axes)", d));
      continue;
    }
    ResizeAxisCoordinates axis;
    axis.in = in[d];
    if (scales) {
      axis.scale = static_cast<float>((*scales)[d]);
      axis.resized_length = axis.scale * static_cast<float>(in[d]);
      form.scales.push_back((*scales)[d]);
    } else {
      axis.scale = static_cast<float>(out[d]) / static_cast<float>(in[d]);
      axis.resized_length = static_cast<float>(out[d]);
    }
    form.axes.push_back(axis);
    form.out.push_back(out[d]);
  }
  if (!legacy && !scales && !(c.has(3) && c.elements_in(3) > 0)) {
    c.fail("scales (input 2) must be a constant float tensor");
  }
  if (legacy && !scales) c.fail("scales must be a constant float tensor");
  return form;
}

// F.interpolate's nearest source index of output o (ATen's nearest_idx / nearest_exact_idx,
// with the scale torch takes from the sizes).
int64_t torch_nearest(int64_t o, int64_t in, int64_t out, bool exact) {
  if (in == out) return o;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float x = exact ? (static_cast<float>(o) + 0.5f) * scale : static_cast<float>(o) * scale;
  return std::min(static_cast<int64_t>(std::floor(x)), in - 1);
}

// Whether torch's nearest (or nearest-exact) picks the source index cleave's kernel does for
// every output index of every spatial axis.
bool same_nearest(const ResizeForm& form, bool exact) {
  for (std::size_t a = 0; a < form.axes.size(); ++a) {
    const ResizeAxisCoordinates& axis = form.axes[a];
    for (int64_t o = 0; o < form.out[a]; ++o) {
      const float x = resize_source_coordinate(form.transform, static_cast<float>(o), axis);
      if (std::isnan(x)) return false;
      const int64_t index = std::clamp<int64_t>(
          resize_nearest_index(form.rounding, std::clamp(x, -3.0f, axis.in + 2.0f), axis.scale < 1),
          0, axis.in - 1);
      if (index != torch_nearest(o, axis.in, form.out[a], exact)) return false;
    }
  }
  return true;
}

std::vector<std::string> resize(const Call& c) {
  const ResizeForm form = resize_form(c);
  const std::size_t r = form.axes.size();
  if (form.mode == "nearest") {
    const char* mode = same_nearest(form, false)  ? "nearest"
                       : same_nearest(form, true) ? "nearest-exact"
                                                  : nullptr;
    if (!mode) {
      c.fail(fmt::format(
          "nearest with coordinate_transformation_mode '{}' and nearest_mode '{}' picks other "
          "pixels than F.interpolate's nearest and nearest-exact (asymmetric with floor, "
          "half_pixel with round_prefer_ceil map)",
          form.transform_name, form.rounding_name));
    }
    return {unary_line(c, fmt::format("F.interpolate({}, size={}, mode='{}')", c.in(0),
                                      py_tuple(form.out), mode))};
  }
  if (form.mode != "linear") c.fail(fmt::format("mode '{}' (nearest and linear map)", form.mode));
  bool align_corners = false;
  if (form.transform == ResizeTransform::kAlignCorners) {
    align_corners = true;
  } else if (form.transform == ResizeTransform::kPytorchHalfPixel) {
    // Only an output axis of size 1 tells pytorch_half_pixel from half_pixel.
    for (int64_t size : form.out) {
      if (size == 1) c.fail("pytorch_half_pixel resizing an axis to size 1");
    }
  } else if (form.transform != ResizeTransform::kHalfPixel) {
    c.fail(fmt::format(
        "linear with coordinate_transformation_mode '{}' (half_pixel, pytorch_half_pixel and "
        "align_corners map onto F.interpolate)",
        form.transform_name));
  }
  static const char* const kModes[] = {"linear", "bilinear", "trilinear"};
  std::string size = fmt::format("size={}", py_tuple(form.out));
  if (!form.scales.empty() && !align_corners) {
    // Given scales set the coordinates (x / scale), not out / in: torch does so with
    // scale_factor when it is not recomputed, and sizes the output floor(in * scale).
    std::vector<std::string> factors;
    for (std::size_t a = 0; a < r; ++a) {
      if (static_cast<int64_t>(std::floor(static_cast<double>(form.axes[a].in) * form.scales[a])) !=
          form.out[a]) {
        c.fail(fmt::format("scale {} of axis {}: torch would size it differently", form.scales[a],
                           a + 2));
      }
      factors.push_back(py_float(form.scales[a]));
    }
    size = fmt::format("scale_factor=({}{}), recompute_scale_factor=False",
                       fmt::join(factors, ", "), r == 1 ? "," : "");
  }
  return {unary_line(c, fmt::format("F.interpolate({}, {}, mode='{}', align_corners={})", c.in(0),
                                    size, kModes[r - 1], align_corners ? "True" : "False"))};
}

}  // namespace

void add_resize_writers(std::map<std::string, Writer>& t) {
  t["Resize"] = resize;
  t["Upsample"] = resize;
}

}  // namespace cleave::pytorch_detail
