// Resize (opsets 10-17) and Upsample (7-9): nearest, N-linear and cubic, one axis at a time.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Transform {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// kSimple is how Upsample and Resize-10 rounded: truncate when enlarging, ceil when shrinking.
enum class Rounding { kSimple, kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeSettings {
  Interpolation interpolation = Interpolation::kNearest;
  Transform transform = Transform::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
};

// One axis: its sizes, the scale the coordinates use and the crop box (tf_crop_and_resize).
// `resized_length` is what the coordinate formulas call length_resized: the ONNX reference
// takes in × scale there, before rounding down, when scales are given (ONNX Runtime takes the
// rounded size; the two differ only for scales that do not give a whole size).
struct AxisResize {
  int64_t in = 0, out = 0;
  float scale = 1.0f;
  float resized_length = 0.0f;
  float roi_start = 0.0f, roi_end = 1.0f;
};

// Input coordinate of output coordinate x, in the float arithmetic ONNX Runtime uses.
float original_coordinate(Transform transform, float x, const AxisResize& axis) {
  auto in = static_cast<float>(axis.in);
  float out = axis.resized_length;
  switch (transform) {
    case Transform::kAsymmetric:
      return x / axis.scale;
    case Transform::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5f) / axis.scale - 0.5f : 0.0f;
    case Transform::kTfHalfPixelForNn:
      return (x + 0.5f) / axis.scale;
    case Transform::kAlignCorners:
      return out == 1 ? 0.0f : x * (in - 1) / (out - 1);
    case Transform::kTfCropAndResize:
      return static_cast<float>(out > 1 ? axis.roi_start * (in - 1) +
                                              (x * (axis.roi_end - axis.roi_start) * (in - 1)) /
                                                  (out - 1)
                                        : 0.5 * (axis.roi_start + axis.roi_end) * (in - 1));
    case Transform::kHalfPixel:
      break;
  }
  return (x + 0.5f) / axis.scale - 0.5f;
}

int64_t nearest_index(Rounding rounding, float x, bool shrinking) {
  switch (rounding) {
    case Rounding::kSimple:
      return shrinking ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    case Rounding::kRoundPreferCeil:
      return static_cast<int64_t>(std::round(x));
    case Rounding::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case Rounding::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case Rounding::kRoundPreferFloor:
      break;
  }
  if (x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f) {
    return static_cast<int64_t>(std::floor(x));
  }
  return static_cast<int64_t>(std::round(x));
}

// Keeps a coordinate where casting it is defined; every result stays the same because
// coordinates this far out only ever read the edge (or nothing, with exclude_outside).
float bounded(float x, const AxisResize& axis) {
  if (std::isnan(x)) return 0.0f;
  return std::clamp(x, -3.0f, static_cast<float>(axis.in + 2));
}

bool outside(const ResizeSettings& settings, float x, const AxisResize& axis) {
  return settings.transform == Transform::kTfCropAndResize &&
         (x < 0 || x > static_cast<float>(axis.in - 1));
}

// Nearest: the source index of each output index, -1 where the extrapolation value goes.
std::vector<int64_t> nearest_table(const ResizeSettings& settings, const AxisResize& axis) {
  std::vector<int64_t> table(axis.out);
  for (int64_t o = 0; o < axis.out; ++o) {
    float x = original_coordinate(settings.transform, static_cast<float>(o), axis);
    if (outside(settings, x, axis)) {
      table[o] = -1;
      continue;
    }
    x = bounded(x, axis);
    table[o] =
        std::clamp<int64_t>(nearest_index(settings.rounding, x, axis.scale < 1), 0, axis.in - 1);
  }
  return table;
}

// Linear and cubic: each output index is a weighted sum of `taps` input indices.
struct AxisTaps {
  int taps = 0;
  std::vector<int64_t> index;  // out × taps
  std::vector<float> weight;   // out × taps
  std::vector<bool> outside;   // out: takes the extrapolation value
  bool identity = false;       // out == in and every output copies its own input
};

std::array<float, 4> cubic_coefficients(float t, float a) {
  float s = t + 1, u = 1 - t, v = 2 - t;
  return {((a * s - 5 * a) * s + 8 * a) * s - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
          ((a + 2) * u - (a + 3)) * u * u + 1, ((a * v - 5 * a) * v + 8 * a) * v - 4 * a};
}

AxisTaps interpolation_taps(const ResizeSettings& settings, const AxisResize& axis) {
  AxisTaps result;
  bool cubic = settings.interpolation == Interpolation::kCubic;
  result.taps = cubic ? 4 : 2;
  result.index.resize(axis.out * result.taps);
  result.weight.resize(axis.out * result.taps);
  result.outside.resize(axis.out);
  int64_t last = axis.in - 1;
  for (int64_t o = 0; o < axis.out; ++o) {
    float x = original_coordinate(settings.transform, static_cast<float>(o), axis);
    result.outside[o] = outside(settings, x, axis);
    x = bounded(x, axis);
    int64_t* index = &result.index[o * result.taps];
    float* weight = &result.weight[o * result.taps];
    if (!cubic) {
      // Coordinates beyond the edges read the edge, as if the input were edge-padded.
      x = std::clamp(x, 0.0f, static_cast<float>(last));
      int64_t low = std::min(static_cast<int64_t>(x), last);
      float fraction = x - static_cast<float>(low);
      index[0] = low;
      index[1] = std::min(low + 1, last);
      weight[0] = 1 - fraction;
      weight[1] = fraction;
      continue;
    }
    float floor_x = std::floor(x);
    auto base = static_cast<int64_t>(floor_x) - 1;
    std::array<float, 4> coefficients = cubic_coefficients(x - floor_x, settings.cubic_a);
    float sum = 0;
    for (int t = 0; t < 4; ++t) {
      int64_t source = base + t;
      bool inside = source >= 0 && source <= last;
      if (settings.exclude_outside && !inside) coefficients[t] = 0;
      sum += coefficients[t];
      index[t] = std::clamp<int64_t>(source, 0, last);
      weight[t] = coefficients[t];
    }
    if (settings.exclude_outside && sum != 0) {
      for (int t = 0; t < 4; ++t) weight[t] /= sum;
    }
  }
  // An axis that keeps its size and maps every output onto its own input needs no pass.
  result.identity = axis.in == axis.out;
  for (int64_t o = 0; result.identity && o < axis.out; ++o) {
    float own = 0;
    for (int t = 0; t < result.taps; ++t) {
      float weight = result.weight[o * result.taps + t];
      if (result.index[o * result.taps + t] == o) {
        own += weight;
      } else if (weight != 0) {
        result.identity = false;
      }
    }
    result.identity = result.identity && own == 1.0f;
  }
  return result;
}

// The last-axis pass with the tap count known at compile time, so the dot product unrolls.
template <typename T, int kTaps>
void last_axis_pass(const AxisTaps& taps, int64_t outer, int64_t in_size, int64_t out_size,
                    const T* source, T* target, bool parallel, int threads) {
#pragma omp parallel for num_threads(std::max(threads, 1)) if (parallel)
  for (int64_t o = 0; o < outer; ++o) {
    const T* line_in = source + o * in_size;
    T* line_out = target + o * out_size;
    const int64_t* index = taps.index.data();
    const float* weight = taps.weight.data();
    for (int64_t y = 0; y < out_size; ++y, index += kTaps, weight += kTaps) {
      T sum = 0;
      for (int t = 0; t < kTaps; ++t) sum += static_cast<T>(weight[t]) * line_in[index[t]];
      line_out[y] = sum;
    }
  }
}

// One separable pass: resizes axis `axis` of `shape` from `source` into `target`.
template <typename T>
void interpolate_axis(const AxisTaps& taps, std::span<const int64_t> shape, std::size_t axis,
                      int64_t out_size, const T* source, T* target, int threads) {
  int64_t outer = product(shape.first(axis)), in_size = shape[axis];
  int64_t inner = product(shape.subspan(axis + 1));
  int count = taps.taps;
  bool parallel = threads > 1 && outer * out_size * inner >= (1 << 14);
  if (inner == 1) {
    // The last axis: every output is a dot product of a few neighbouring inputs.
    if (count == 2) {
      last_axis_pass<T, 2>(taps, outer, in_size, out_size, source, target, parallel, threads);
    } else {
      last_axis_pass<T, 4>(taps, outer, in_size, out_size, source, target, parallel, threads);
    }
    return;
  }
  // An outer axis: every output row is a weighted sum of a few input rows.
  int64_t rows = outer * out_size;
#pragma omp parallel for num_threads(std::max(threads, 1)) if (parallel)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t o = row / out_size, y = row % out_size;
    const T* block = source + o * in_size * inner;
    T* line = target + row * inner;
    const int64_t* index = &taps.index[y * count];
    const float* weight = &taps.weight[y * count];
    const T* first = block + index[0] * inner;
    auto w0 = static_cast<T>(weight[0]);
    for (int64_t i = 0; i < inner; ++i) line[i] = w0 * first[i];
    for (int t = 1; t < count; ++t) {
      if (weight[t] == 0) continue;
      const T* next = block + index[t] * inner;
      auto w = static_cast<T>(weight[t]);
      for (int64_t i = 0; i < inner; ++i) line[i] += w * next[i];
    }
  }
}

template <typename T>
void interpolate(const std::vector<AxisTaps>& axes, std::span<const int64_t> in_shape,
                 std::span<const int64_t> out_shape, const std::vector<std::size_t>& order,
                 T extrapolation, const T* source, T* target, int threads) {
  std::vector<std::size_t> passes;
  for (std::size_t axis : order) {
    if (!axes[axis].identity) passes.push_back(axis);
  }
  int64_t total = product(out_shape);
  if (passes.empty()) {
    std::memcpy(target, source, static_cast<std::size_t>(total) * sizeof(T));
  }
  std::vector<int64_t> shape(in_shape.begin(), in_shape.end());
  std::vector<T> buffers[2];
  const T* current = source;
  for (std::size_t p = 0; p < passes.size(); ++p) {
    std::size_t axis = passes[p];
    int64_t out_size = out_shape[axis];
    std::vector<int64_t> next_shape = shape;
    next_shape[axis] = out_size;
    T* next = target;
    if (p + 1 < passes.size()) {
      buffers[p % 2].resize(product(next_shape));
      next = buffers[p % 2].data();
    }
    interpolate_axis(axes[axis], shape, axis, out_size, current, next, threads);
    current = next;
    shape = next_shape;
  }
  // tf_crop_and_resize: outputs whose coordinate leaves the input on any axis are constant.
  bool any_outside = false;
  for (const AxisTaps& axis : axes) {
    any_outside = any_outside ||
                  std::find(axis.outside.begin(), axis.outside.end(), true) != axis.outside.end();
  }
  if (!any_outside) return;
  std::vector<int64_t> index(out_shape.size(), 0);
  for (int64_t p = 0; p < total; ++p) {
    bool out = false;
    for (std::size_t d = 0; d < out_shape.size(); ++d) out = out || axes[d].outside[index[d]];
    if (out) target[p] = extrapolation;
    for (std::size_t d = out_shape.size(); d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

Transform parse_transform(const KernelContext& context, const std::string& name) {
  if (name == "half_pixel") return Transform::kHalfPixel;
  if (name == "pytorch_half_pixel") return Transform::kPytorchHalfPixel;
  if (name == "align_corners") return Transform::kAlignCorners;
  if (name == "asymmetric") return Transform::kAsymmetric;
  if (name == "tf_half_pixel_for_nn") return Transform::kTfHalfPixelForNn;
  if (name == "tf_crop_and_resize") return Transform::kTfCropAndResize;
  throw Error(
      fmt::format("{}: unknown coordinate_transformation_mode '{}'", context.where(), name));
}

Rounding parse_rounding(const KernelContext& context, const std::string& name) {
  if (name == "round_prefer_floor") return Rounding::kRoundPreferFloor;
  if (name == "round_prefer_ceil") return Rounding::kRoundPreferCeil;
  if (name == "floor") return Rounding::kFloor;
  if (name == "ceil") return Rounding::kCeil;
  throw Error(fmt::format("{}: unknown nearest_mode '{}'", context.where(), name));
}

Interpolation parse_interpolation(const KernelContext& context, const std::string& name) {
  if (name == "nearest") return Interpolation::kNearest;
  if (name == "linear" || name == "bilinear") return Interpolation::kLinear;
  if (name == "cubic" && context.node.op_type == "Resize") return Interpolation::kCubic;
  throw Error(fmt::format("{}: unknown mode '{}'", context.where(), name));
}

// Input positions of roi, scales and sizes (-1 where the form has no such input).
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};

std::unique_ptr<Kernel> create_resize(const KernelContext& context) {
  const Tensor& data = context.input(0);
  const Node& node = context.node;
  bool upsample = node.op_type == "Upsample";
  // Upsample and Resize-10 had no coordinate modes: asymmetric with their own rounding.
  bool legacy = upsample || context.opset < 11;
  ResizeSettings settings;
  settings.interpolation = parse_interpolation(context, node.string_attribute("mode", "nearest"));
  ResizeInputs positions;
  std::vector<double> scale_values;
  if (legacy) {
    settings.transform = Transform::kAsymmetric;
    settings.rounding = Rounding::kSimple;
    if (upsample && context.opset < 9) {
      for (float f :
           node.attribute("scales") ? node.attribute("scales")->floats : std::vector<float>{}) {
        scale_values.push_back(f);
      }
    } else {
      positions.scales = 1;
    }
  } else {
    settings.transform = parse_transform(
        context, node.string_attribute("coordinate_transformation_mode", "half_pixel"));
    settings.rounding =
        parse_rounding(context, node.string_attribute("nearest_mode", "round_prefer_floor"));
    settings.cubic_a = node.float_attribute("cubic_coeff_a", -0.75f);
    settings.exclude_outside = node.int_attribute("exclude_outside", 0) != 0;
    settings.extrapolation = node.float_attribute("extrapolation_value", 0.0f);
    positions = {1, 2, 3};
    if (node.int_attribute("antialias", 0) != 0 || node.attribute("axes") ||
        node.string_attribute("keep_aspect_ratio_policy", "stretch") != "stretch") {
      throw UnsupportedError(fmt::format(
          "{}: Resize's antialias, axes and keep_aspect_ratio_policy (opset 18) are not "
          "supported",
          context.where()));
    }
  }
  auto rank = static_cast<int64_t>(data.rank());
  std::vector<int64_t> sizes;
  if (positions.sizes >= 0 && context.has_input(positions.sizes) &&
      context.input(positions.sizes).element_count() > 0) {
    sizes = int_input(context, positions.sizes, "sizes");
  }
  if (positions.scales >= 0 && context.has_input(positions.scales)) {
    scale_values = real_input(context, positions.scales, "scales");
  }
  if (!sizes.empty() && !scale_values.empty()) {
    throw Error(fmt::format("{}: only one of scales and sizes may be given", context.where()));
  }
  std::vector<AxisResize> axes(rank);
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != rank) {
      throw Error(fmt::format("{}: sizes {} should have one entry per axis of {}", context.where(),
                              format_dims(sizes), data.describe()));
    }
    for (int64_t d = 0; d < rank; ++d) {
      axes[d].in = data.dim(d);
      axes[d].out = sizes[d];
      if (sizes[d] < 0 || sizes[d] > kMaxAxisLength || (data.dim(d) == 0 && sizes[d] != 0)) {
        throw Error(fmt::format("{}: cannot resize axis {} of {} to size {}", context.where(), d,
                                data.describe(), sizes[d]));
      }
      axes[d].scale =
          data.dim(d) == 0 ? 1.0f : static_cast<float>(sizes[d]) / static_cast<float>(data.dim(d));
      axes[d].resized_length = static_cast<float>(sizes[d]);
    }
  } else {
    if (static_cast<int64_t>(scale_values.size()) != rank) {
      throw Error(fmt::format("{}: scales should have one entry per axis of {} (got {})",
                              context.where(), data.describe(), scale_values.size()));
    }
    for (int64_t d = 0; d < rank; ++d) {
      auto scale = static_cast<float>(scale_values[d]);
      if (!(scale > 0) || !std::isfinite(scale)) {
        throw Error(fmt::format("{}: scale {} of axis {} should be positive", context.where(),
                                scale_values[d], d));
      }
      axes[d].in = data.dim(d);
      axes[d].scale = scale;
      axes[d].resized_length = scale * static_cast<float>(data.dim(d));
      if (!(axes[d].resized_length <= static_cast<float>(kMaxAxisLength))) {
        throw Error(fmt::format("{}: scale {} makes axis {} longer than {} elements",
                                context.where(), scale_values[d], d, kMaxAxisLength));
      }
      axes[d].out = static_cast<int64_t>(axes[d].resized_length);
    }
  }
  if (settings.transform == Transform::kTfCropAndResize) {
    std::vector<double> roi;
    if (context.has_input(positions.roi)) roi = real_input(context, positions.roi, "roi");
    if (static_cast<int64_t>(roi.size()) != 2 * rank) {
      throw Error(fmt::format("{}: tf_crop_and_resize needs roi with {} entries, got {}",
                              context.where(), 2 * rank, roi.size()));
    }
    for (int64_t d = 0; d < rank; ++d) {
      axes[d].roi_start = static_cast<float>(roi[d]);
      axes[d].roi_end = static_cast<float>(roi[d + rank]);
    }
  }
  std::vector<int64_t> out_shape;
  for (const AxisResize& axis : axes) out_shape.push_back(axis.out);
  plain_byte_size(data.dtype(), out_shape);
  std::vector<std::size_t> shape_inputs;
  for (int position : {positions.roi, positions.scales, positions.sizes}) {
    if (position >= 0) shape_inputs.push_back(static_cast<std::size_t>(position));
  }
  std::vector<int64_t> in_shape = data.shape();
  int threads = context.threads;
  OutputSpec spec{data.dtype(), out_shape, std::nullopt, -1};

  if (settings.interpolation == Interpolation::kNearest) {
    std::vector<std::vector<int64_t>> tables;
    for (const AxisResize& axis : axes) tables.push_back(nearest_table(settings, axis));
    std::vector<std::byte> fill = encode_scalar(context, data.dtype(), settings.extrapolation);
    std::size_t element_bytes = element_size(data.dtype());
    return make_kernel(
        context, {spec},
        [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
          table_copy(element_bytes, in_shape, tables, fill, inputs[0]->raw(), outputs[0]->raw(),
                     threads);
        },
        shape_inputs);
  }

  if (data.dtype() != DataType::kFloat && data.dtype() != DataType::kDouble) {
    throw UnsupportedError(
        fmt::format("{}: linear and cubic Resize support float and double "
                    "data, not {}",
                    context.where(), dtype_name(data.dtype())));
  }
  for (const AxisResize& axis : axes) {
    if (axis.in == 0 && axis.out > 0) {
      throw Error(fmt::format("{}: cannot interpolate an empty axis", context.where()));
    }
  }
  std::vector<AxisTaps> taps;
  for (const AxisResize& axis : axes) {
    taps.push_back(
        axis.in == 0
            ? AxisTaps{settings.interpolation == Interpolation::kCubic ? 4 : 2, {}, {}, {}, true}
            : interpolation_taps(settings, axis));
  }
  // Shrinking axes first keeps the intermediate tensors small; among equal ratios the later
  // axis first, because the last-axis pass (a gather per element) costs more per output than
  // the row passes of outer axes.
  std::vector<std::size_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    int64_t left = axes[a].out * std::max<int64_t>(axes[b].in, 1);
    int64_t right = axes[b].out * std::max<int64_t>(axes[a].in, 1);
    return left != right ? left < right : a > b;
  });
  float extrapolation = settings.extrapolation;
  bool is_double = data.dtype() == DataType::kDouble;
  return make_kernel(
      context, {spec},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        if (product(out_shape) == 0) return;
        if (is_double) {
          interpolate<double>(taps, in_shape, out_shape, order, extrapolation,
                              inputs[0]->data<double>(), outputs[0]->data<double>(), threads);
        } else {
          interpolate<float>(taps, in_shape, out_shape, order, extrapolation,
                             inputs[0]->data<float>(), outputs[0]->data<float>(), threads);
        }
      },
      shape_inputs);
}

}  // namespace

void register_resize_kernels(KernelRegistry& registry) {
  add_kernel(registry, "Resize", create_resize);
  add_kernel(registry, "Upsample", create_resize);
}

}  // namespace cleave::shape
