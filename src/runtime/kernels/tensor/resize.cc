// Resize (opsets 10-17) and Upsample (7-9): nearest, N-linear and cubic, one axis at a time.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"
#include "runtime/kernels/tensor/resize_coordinates.h"
#include "runtime/kernels/tensor/resize_passes.h"

namespace cleave::shape {

namespace {

enum class Interpolation { kNearest, kLinear, kCubic };
using Transform = ResizeTransform;
using Rounding = ResizeRounding;

struct ResizeSettings {
  Interpolation interpolation = Interpolation::kNearest;
  Transform transform = Transform::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
};

// One axis: its sizes, the scale the coordinates use and the crop box (tf_crop_and_resize).
// The formulas' length_resized is in × scale when scales are given (ONNX Runtime takes the
// rounded size; the two differ only for scales that do not give a whole size).
struct AxisResize : ResizeAxisCoordinates {
  int64_t out = 0;
};

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
    float x = resize_source_coordinate(settings.transform, static_cast<float>(o), axis);
    if (outside(settings, x, axis)) {
      table[o] = -1;
      continue;
    }
    x = bounded(x, axis);
    table[o] = std::clamp<int64_t>(resize_nearest_index(settings.rounding, x, axis.scale < 1), 0,
                                   axis.in - 1);
  }
  return table;
}

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
    float x = resize_source_coordinate(settings.transform, static_cast<float>(o), axis);
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

// tf_crop_and_resize: outputs whose coordinate leaves the input on any axis are constant.
template <typename T>
void fill_outside(const std::vector<AxisTaps>& axes, std::span<const int64_t> out_shape,
                  T extrapolation, T* target) {
  bool any_outside = false;
  for (const AxisTaps& axis : axes) {
    any_outside = any_outside ||
                  std::find(axis.outside.begin(), axis.outside.end(), true) != axis.outside.end();
  }
  if (!any_outside) return;
  std::vector<int64_t> index(out_shape.size(), 0);
  for (int64_t p = 0, total = product(out_shape); p < total; ++p) {
    bool out = false;
    for (std::size_t d = 0; d < out_shape.size(); ++d) out = out || axes[d].outside[index[d]];
    if (out) target[p] = extrapolation;
    for (std::size_t d = out_shape.size(); d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

// One dim of the bytes of a tensor in a channels-last or channel-blocked layout, outermost
// first: the axis it holds (kChannelBlock: the channels inside one block) and its sizes.
constexpr int kChannelBlock = -1;
struct BytesDim {
  int axis = 0;
  int64_t in = 0, out = 0;
};

// The dims of the bytes of `desc` (a float tensor of rank 3 to 5) when it is channels-last or
// in blocks of 8 or 16 channels; empty for any other layout.
std::vector<BytesDim> bytes_dims(const dnnl::memory::desc& desc, std::span<const int64_t> in_shape,
                                 std::span<const int64_t> out_shape) {
  using Tag = dnnl::memory::format_tag;
  auto rank = static_cast<int>(in_shape.size());
  auto matches = [&](Tag tag) {
    return tag != Tag::undef && dnnl::memory::desc(desc.dims(), desc.data_type(), tag) == desc;
  };
  std::vector<BytesDim> dims;
  Tag channels_last = rank == 3   ? Tag::acb
                      : rank == 4 ? Tag::acdb
                      : rank == 5 ? Tag::acdeb
                                  : Tag::undef;
  if (matches(channels_last)) {
    dims.push_back({0, in_shape[0], out_shape[0]});
    for (int a = 2; a < rank; ++a) dims.push_back({a, in_shape[a], out_shape[a]});
    dims.push_back({1, in_shape[1], out_shape[1]});
    return dims;
  }
  for (int64_t block : {16, 8}) {
    if (!matches(channel_blocked_tag(rank, block))) continue;
    auto blocks = [block](int64_t channels) { return (channels + block - 1) / block; };
    dims.push_back({0, in_shape[0], out_shape[0]});
    dims.push_back({1, blocks(in_shape[1]), blocks(out_shape[1])});
    for (int a = 2; a < rank; ++a) dims.push_back({a, in_shape[a], out_shape[a]});
    dims.push_back({kChannelBlock, block, block});
    return dims;
  }
  return dims;
}

// A prepared Resize: its tables or taps, the layout it computes in, and the reorders around.
struct ResizePlan {
  bool nearest = false;
  DataType dtype = DataType::kFloat;
  int threads = 1;
  VectorIsa isa = VectorIsa::kBaseline;  // The loops of the widest ISA allowed (the cap).
  float extrapolation = 0.0f;
  std::vector<int64_t> in_shape, out_shape;
  std::vector<std::vector<int64_t>> tables;  // Nearest: the source index per output index.
  std::vector<std::byte> fill;               // Nearest: the extrapolation value's bytes.
  std::vector<AxisTaps> taps;                // Linear and cubic, per axis.
  std::vector<std::size_t> order;            // Linear and cubic: the axes in pass order.
  // What the passes run over: the plain axes, or the dims of a blocked input's bytes.
  std::vector<int64_t> compute_shape;
  std::vector<std::vector<int64_t>> compute_tables;
  std::vector<ResizeDim> dims;
  std::vector<std::size_t> dim_order;
  // A blocked input reordered to plain before computing, or a result computed in the input's
  // layout (`computed_bytes` long) reordered to the plain output.
  std::optional<LayoutReorder> input_to_plain, output_to_plain;
  std::size_t computed_bytes = 0;

  // Runs the passes over `bytes` (empty: the plain axes). Taps must not change afterwards:
  // `dims` points into them.
  void compute_in(const std::vector<BytesDim>& bytes) {
    std::vector<BytesDim> layout = bytes;
    if (layout.empty()) {
      for (std::size_t a = 0; a < in_shape.size(); ++a) {
        layout.push_back({static_cast<int>(a), in_shape[a], out_shape[a]});
      }
    }
    compute_shape.clear();
    compute_tables.clear();
    dims.clear();
    constexpr std::size_t kNone = ~std::size_t{0};
    std::vector<std::size_t> position(in_shape.size(), kNone);
    for (std::size_t p = 0; p < layout.size(); ++p) {
      const BytesDim& dim = layout[p];
      compute_shape.push_back(dim.in);
      // Channels stay put in a blocked layout (their axis is split in two dims).
      bool kept = dim.axis == kChannelBlock || (!bytes.empty() && dim.axis == 1);
      if (!kept) position[dim.axis] = p;
      if (nearest && kept) {
        compute_tables.emplace_back(dim.out);
        std::iota(compute_tables.back().begin(), compute_tables.back().end(), 0);
      } else if (nearest) {
        compute_tables.push_back(tables[dim.axis]);
      } else {
        auto last = static_cast<int>(in_shape.size()) - 1;
        dims.push_back({dim.in, dim.out, kept ? nullptr : &taps[dim.axis], dim.axis == last});
      }
    }
    dim_order.clear();
    for (std::size_t axis : order) {
      if (position[axis] != kNone) dim_order.push_back(position[axis]);
    }
  }

  template <typename T>
  void interpolate(const void* in, void* out) const {
    interpolate_dims<T>(dims, dim_order, static_cast<const T*>(in), static_cast<T*>(out), threads,
                        isa);
    fill_outside<T>(taps, out_shape, static_cast<T>(extrapolation), static_cast<T*>(out));
  }

  void run(const void* in, void* out, dnnl::stream& stream) {
    if (product(out_shape) == 0) return;
    std::optional<Buffer> staged_in, staged_out;
    if (input_to_plain) {
      staged_in.emplace(input_to_plain->target().get_size());
      input_to_plain->run(in, staged_in->data(), stream);
      stream.wait();
      in = staged_in->data();
    }
    void* target = out;
    if (output_to_plain) {
      staged_out.emplace(computed_bytes);
      target = staged_out->data();
    }
    if (nearest) {
      table_copy(element_size(dtype), compute_shape, compute_tables, fill, in, target, threads);
    } else if (dtype == DataType::kDouble) {
      interpolate<double>(in, target);
    } else {
      interpolate<float>(in, target);
    }
    if (output_to_plain) {
      output_to_plain->run(target, out, stream);
      stream.wait();  // Before the staged result is freed.
    }
  }
};

// Whether the channel axis keeps every channel in place (the resize is of batch and space).
bool channels_kept(const ResizePlan& plan) {
  if (plan.in_shape.size() < 3 || plan.in_shape[1] != plan.out_shape[1]) return false;
  if (!plan.nearest) return plan.taps[1].identity;
  const std::vector<int64_t>& table = plan.tables[1];
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// A blocked input (a convolution's output) that is channels-last or channel-blocked, and whose
// channels stay, is resized in its own layout: every pass then runs over vectors of channels.
// The output keeps that layout where its consumers take it; otherwise the smaller of input and
// output is reordered to plain. Any other blocked input is reordered to plain first.
void plan_blocked_input(const KernelContext& context, ResizePlan& plan, OutputSpec& spec,
                        bool in_layout_possible) {
  const dnnl::memory::desc& in_desc = *context.input(0).layout();
  std::vector<BytesDim> bytes;
  if (in_layout_possible) bytes = bytes_dims(in_desc, plan.in_shape, plan.out_shape);
  std::optional<dnnl::memory::desc> out_desc;
  if (!bytes.empty()) out_desc = same_layout_for(in_desc, plan.out_shape);
  bool reorder_input = !out_desc || (!context.blocked_outputs_allowed &&
                                     product(plan.in_shape) <= product(plan.out_shape));
  if (reorder_input) {
    plan.input_to_plain.emplace(in_desc, plain_desc(plan.in_shape), context.engine);
    return;
  }
  plan.compute_in(bytes);
  if (context.blocked_outputs_allowed) {
    spec.layout = recorded_layout(*out_desc, plan.out_shape);
    return;
  }
  plan.computed_bytes = out_desc->get_size();
  plan.output_to_plain.emplace(*out_desc, plain_desc(plan.out_shape), context.engine);
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

// The settings of the node's form: Upsample and Resize-10 had no coordinate modes (asymmetric
// with their own rounding); Upsample before opset 9 has its scales as an attribute, into
// `scale_values`. Returns where the form's roi, scales and sizes inputs are.
ResizeInputs read_settings(const KernelContext& context, ResizeSettings& settings,
                           std::vector<double>& scale_values) {
  const Node& node = context.node;
  bool upsample = node.op_type == "Upsample";
  bool legacy = upsample || context.opset < 11;
  settings.interpolation = parse_interpolation(context, node.string_attribute("mode", "nearest"));
  ResizeInputs positions;
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
    return positions;
  }
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
    throw UnsupportedError(
        fmt::format("{}: Resize's antialias, axes and keep_aspect_ratio_policy (opset 18) are not "
                    "supported",
                    context.where()));
  }
  return positions;
}

// Every axis's sizes and scale, from the sizes input or else the scales.
std::vector<AxisResize> resize_axes(const KernelContext& context, const ResizeInputs& positions,
                                    std::vector<double> scale_values) {
  const Tensor& data = context.input(0);
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
    return axes;
  }
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
      throw Error(fmt::format("{}: scale {} makes axis {} longer than {} elements", context.where(),
                              scale_values[d], d, kMaxAxisLength));
    }
    axes[d].out = static_cast<int64_t>(axes[d].resized_length);
  }
  return axes;
}

// tf_crop_and_resize's region of interest, one start and one end per axis.
void read_roi(const KernelContext& context, const ResizeInputs& positions,
              std::vector<AxisResize>& axes) {
  const auto rank = static_cast<int64_t>(axes.size());
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

// Linear and cubic: the taps of every axis and the order the axes are resized in.
void plan_interpolation(const KernelContext& context, const ResizeSettings& settings,
                        const std::vector<AxisResize>& axes, ResizePlan& plan) {
  const Tensor& data = context.input(0);
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
  for (const AxisResize& axis : axes) {
    plan.taps.push_back(axis.in == 0
                            ? AxisTaps{settings.interpolation == Interpolation::kCubic ? 4 : 2,
                                       {},
                                       {},
                                       {},
                                       true,
                                       {},
                                       {}}
                            : interpolation_taps(settings, axis));
    add_tap_columns(plan.taps.back());
  }
  // Shrinking axes first keeps the intermediate tensors small; among equal ratios the later
  // axis first, because the last-axis pass (a gather per element) costs more per output
  // than the row passes of outer axes.
  plan.order.resize(axes.size());
  std::iota(plan.order.begin(), plan.order.end(), 0);
  std::sort(plan.order.begin(), plan.order.end(), [&](std::size_t a, std::size_t b) {
    int64_t left = axes[a].out * std::max<int64_t>(axes[b].in, 1);
    int64_t right = axes[b].out * std::max<int64_t>(axes[a].in, 1);
    return left != right ? left < right : a > b;
  });
}

std::unique_ptr<Kernel> create_resize(const KernelContext& context) {
  const Tensor& data = context.input(0);
  ResizeSettings settings;
  std::vector<double> scale_values;
  const ResizeInputs positions = read_settings(context, settings, scale_values);
  std::vector<AxisResize> axes = resize_axes(context, positions, scale_values);
  if (settings.transform == Transform::kTfCropAndResize) read_roi(context, positions, axes);
  std::vector<int64_t> out_shape;
  for (const AxisResize& axis : axes) out_shape.push_back(axis.out);
  plain_byte_size(data.dtype(), out_shape);
  std::vector<std::size_t> shape_inputs;
  for (int position : {positions.roi, positions.scales, positions.sizes}) {
    if (position >= 0) shape_inputs.push_back(static_cast<std::size_t>(position));
  }
  auto plan = std::make_shared<ResizePlan>();
  plan->threads = context.threads;
  plan->isa = vector_isa();
  plan->extrapolation = settings.extrapolation;
  plan->dtype = data.dtype();
  plan->in_shape = data.shape();
  plan->out_shape = out_shape;
  plan->nearest = settings.interpolation == Interpolation::kNearest;
  if (plan->nearest) {
    for (const AxisResize& axis : axes) plan->tables.push_back(nearest_table(settings, axis));
    plan->fill = encode_scalar(context, data.dtype(), settings.extrapolation);
  } else {
    plan_interpolation(context, settings, axes, *plan);
  }
  plan->compute_in({});
  OutputSpec spec{data.dtype(), out_shape, std::nullopt, -1};
  if (data.is_blocked()) {
    plan_blocked_input(context, *plan, spec,
                       settings.transform != Transform::kTfCropAndResize && channels_kept(*plan));
  }
  return make_kernel(
      context, {spec},
      [plan](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
             dnnl::stream& stream) { plan->run(inputs[0]->raw(), outputs[0]->raw(), stream); },
      shape_inputs);
}

}  // namespace

void register_resize_kernels(KernelRegistry& registry) {
  for (const char* op_type : {"Resize", "Upsample"}) {
    KernelInfo info;
    info.op_type = op_type;
    info.dtypes = kMovableTypes;
    // A convolution's blocked output is resized in its layout (or reordered here).
    info.accepts_blocked = [](std::size_t input) { return input == 0; };
    info.create = create_resize;
    registry.add(std::move(info));
  }
}

}  // namespace cleave::shape
