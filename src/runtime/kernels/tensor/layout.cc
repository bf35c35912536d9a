// Kernels moving elements: Transpose, Slice, Split, Expand, Tile, Pad, Depth/SpaceToDepth, Trilu.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave::shape {

namespace {

// A kernel copying a strided view of input 0 into its single output.
std::unique_ptr<Kernel> view_copy(const KernelContext& context, std::vector<int64_t> out_shape,
                                  std::vector<int64_t> in_strides, int64_t in_offset,
                                  std::vector<std::size_t> shape_inputs = {}) {
  const Tensor& data = context.input(0);
  std::size_t element_bytes = element_size(data.dtype());
  int threads = context.threads;
  OutputSpec spec{data.dtype(), out_shape, std::nullopt, -1};
  plain_byte_size(spec.dtype, spec.shape);  // Rejects overflowing shapes before running.
  return make_kernel(
      context, {spec},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        strided_copy(element_bytes, out_shape, in_strides, in_offset, inputs[0]->raw(),
                     outputs[0]->raw(), threads);
      },
      std::move(shape_inputs));
}

// The channels-last layout of a rank 3-5 float shape, or an empty descriptor.
dnnl::memory::desc channels_last(const std::vector<int64_t>& shape) {
  using Tag = dnnl::memory::format_tag;
  const Tag tag = shape.size() == 3   ? Tag::nwc
                  : shape.size() == 4 ? Tag::nhwc
                  : shape.size() == 5 ? Tag::ndhwc
                                      : Tag::undef;
  if (tag == Tag::undef) return {};
  return dnnl::memory::desc(to_dnnl_dims(shape), dnnl::memory::data_type::f32, tag);
}

// A float Transpose as one oneDNN reorder, jitted and threaded: ConvNeXt's NCHW<->NHWC
// Transposes took 4.7 of its 55 ms at 2 threads as strided copies. It reads a convolution's
// blocked output directly, unblocking and permuting in one pass, and when the permuted input
// layout already is the plain output (a channels-last convolution's output moved to NHWC),
// the output aliases the input and nothing is copied.
class ReorderTransposeKernel : public Kernel {
 public:
  ReorderTransposeKernel(const KernelContext& context, const std::vector<int64_t>& perm) {
    const Tensor& data = context.input(0);
    for (int64_t axis : perm) spec_.shape.push_back(data.dim(axis));
    // oneDNN's permutation maps each input axis to its output position.
    std::vector<int> to_output(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) to_output[perm[i]] = static_cast<int>(i);
    dnnl::memory::desc permuted = desc_of(data).permute_axes(to_output);
    if (permuted == plain_desc(spec_.shape)) {
      spec_.alias_of = 0;
      return;
    }
    // Likewise when they are the output in channels-last (ConvNeXt's NHWC -> NCHW after each
    // MLP) and the consumers read layouts: its layer scale, residual Add and next depthwise
    // convolution then work in channels-last, with no copy back and forth.
    if (context.blocked_outputs_allowed && data.dtype() == DataType::kFloat &&
        permuted == channels_last(spec_.shape)) {
      spec_.alias_of = 0;
      spec_.layout = permuted;
      return;
    }
    reorder_ = LayoutReorder(permuted, plain_desc(spec_.shape), context.engine);
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (spec_.alias_of >= 0) return;
    reorder_.run(inputs[0]->raw(), outputs[0]->raw(), stream);
  }

 private:
  OutputSpec spec_;
  LayoutReorder reorder_;
};

// Output 0 is input 0's bytes under another shape: a Transpose that moves only axes of size 1,
// a Split into one part. A detector's score filter transposes NonZero's [1, N] indices to
// [N, 1] and splits them along the axis of 1: two copies of megabytes per pyramid level.
std::unique_ptr<Kernel> same_bytes(const KernelContext& context, std::vector<int64_t> shape,
                                   std::vector<std::size_t> shape_inputs = {}) {
  OutputSpec spec{context.input(0).dtype(), std::move(shape), std::nullopt, 0};
  return make_kernel(
      context, {spec},
      [](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        if (outputs[0]) copy_unless_aliased(*inputs[0], *outputs[0]);
      },
      std::move(shape_inputs));
}

// Whether `perm` keeps the axes longer than 1 in their order, so that no element moves.
bool moves_only_unit_axes(std::span<const int64_t> dims, std::span<const int64_t> perm) {
  int64_t last = -1;
  for (int64_t axis : perm) {
    if (dims[axis] == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

std::unique_ptr<Kernel> create_transpose(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  std::vector<int64_t> perm = context.node.ints_attribute("perm");
  if (perm.empty()) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    throw Error(fmt::format("{}: perm {} has {} entries, the input {} has rank {}", context.where(),
                            format_dims(perm), perm.size(), data.describe(), rank));
  }
  perm = normalize_axes(context, perm, rank, "perm");
  std::vector<int64_t> in_strides = data.strides();
  std::vector<int64_t> shape, strides;
  for (int64_t axis : perm) {
    shape.push_back(data.dim(axis));
    strides.push_back(in_strides[axis]);
  }
  if (!data.is_blocked() && moves_only_unit_axes(data.shape(), perm))
    return same_bytes(context, shape);
  if (data.is_blocked() || (data.dtype() == DataType::kFloat && rank >= 2 &&
                            rank <= DNNL_MAX_NDIMS && data.element_count() > 0)) {
    return std::make_unique<ReorderTransposeKernel>(context, perm);
  }
  return view_copy(context, shape, strides, 0);
}

std::unique_ptr<Kernel> create_slice(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  std::vector<int64_t> starts, ends, axes, steps;
  std::vector<std::size_t> shape_inputs;
  if (context.opset < 10) {
    starts = context.node.ints_attribute("starts");
    ends = context.node.ints_attribute("ends");
    axes = context.node.ints_attribute("axes");
  } else {
    starts = int_input(context, 1, "starts");
    ends = int_input(context, 2, "ends");
    if (context.has_input(3)) axes = int_input(context, 3, "axes");
    if (context.has_input(4)) steps = int_input(context, 4, "steps");
    shape_inputs = {1, 2, 3, 4};
  }
  if (starts.size() != ends.size()) {
    throw Error(fmt::format("{}: starts has {} entries, ends {}", context.where(), starts.size(),
                            ends.size()));
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    throw Error(
        fmt::format("{}: starts, ends, axes and steps should have one entry per sliced "
                    "axis (got {}, {}, {}, {})",
                    context.where(), starts.size(), ends.size(), axes.size(), steps.size()));
  }
  axes = normalize_axes(context, axes, rank);
  std::vector<int64_t> in_strides = data.strides();
  std::vector<int64_t> shape = data.shape(), strides = in_strides;
  int64_t offset = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i], dim = data.dim(axis), step = steps[i];
    if (step == 0) throw Error(fmt::format("{}: step of axis {} is 0", context.where(), axis));
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count = 0;
    if (dim == 0) {
      start = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) count = (end - start - 1) / step + 1;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // The magnitude as unsigned: -INT64_MIN does not fit in int64.
      uint64_t magnitude = 0 - static_cast<uint64_t>(step);
      if (start > end)
        count = static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude) + 1;
    }
    shape[axis] = count;
    // With one element or none the step never applies (and a huge step would overflow).
    strides[axis] = count > 1 ? in_strides[axis] * step : in_strides[axis];
    if (count > 0) offset += start * in_strides[axis];
  }
  return view_copy(context, shape, strides, offset, shape_inputs);
}

std::unique_ptr<Kernel> create_split(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  int64_t axis = normalize_axis(context, context.node.int_attribute("axis", 0), rank);
  int64_t dim = data.dim(axis);
  auto outputs = static_cast<int64_t>(context.node.outputs.size());
  std::vector<int64_t> splits;
  std::vector<std::size_t> shape_inputs;
  bool split_from_input = context.opset >= 13 || (context.opset < 2 && context.has_input(1));
  if (split_from_input && context.has_input(1)) {
    splits = int_input(context, 1, "split");
    shape_inputs.push_back(1);
  } else if (!split_from_input) {
    splits = context.node.ints_attribute("split");
  }
  if (splits.empty()) {
    if (context.opset >= 18 && context.node.attribute("num_outputs")) {
      int64_t parts = context.node.int_attribute("num_outputs", outputs);
      if (parts <= 0 || parts != outputs) {
        throw Error(fmt::format("{}: num_outputs is {}, the node has {} outputs", context.where(),
                                parts, outputs));
      }
      int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i) {
        splits.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
      }
    } else {
      if (outputs == 0 || dim % outputs != 0) {
        throw Error(fmt::format("{}: axis {} of size {} cannot be split into {} equal parts",
                                context.where(), axis, dim, outputs));
      }
      splits.assign(outputs, dim / outputs);
    }
  }
  if (static_cast<int64_t>(splits.size()) != outputs) {
    throw Error(fmt::format("{}: split {} has {} entries, the node has {} outputs", context.where(),
                            format_dims(splits), splits.size(), outputs));
  }
  int64_t total = 0;
  for (int64_t part : splits) {
    if (part < 0 || part > dim) {
      throw Error(fmt::format("{}: split {} has an invalid size {}", context.where(),
                              format_dims(splits), part));
    }
    total += part;
  }
  if (total != dim) {
    throw Error(fmt::format("{}: split {} sums to {}, axis {} has size {}", context.where(),
                            format_dims(splits), total, axis, dim));
  }
  if (splits.size() == 1) return same_bytes(context, data.shape(), shape_inputs);
  std::span<const int64_t> dims = data.shape();
  int64_t outer = product(dims.first(axis)), inner = product(dims.subspan(axis + 1));
  std::vector<OutputSpec> specs;
  for (int64_t part : splits) {
    std::vector<int64_t> shape = data.shape();
    shape[axis] = part;
    specs.push_back(OutputSpec{data.dtype(), shape, std::nullopt, -1});
  }
  std::size_t element_bytes = element_size(data.dtype());
  int threads = context.threads;
  return make_kernel(
      context, specs,
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outs) {
        int64_t start = 0;
        for (std::size_t i = 0; i < splits.size(); ++i) {
          if (outs[i]) {
            std::vector<int64_t> shape = {outer, splits[i] * inner};
            std::vector<int64_t> strides = {dim * inner, 1};
            strided_copy(element_bytes, shape, strides, start * inner, inputs[0]->raw(),
                         outs[i]->raw(), threads);
          }
          start += splits[i];
        }
      },
      shape_inputs);
}

std::unique_ptr<Kernel> create_expand(const KernelContext& context) {
  const Tensor& data = context.input(0);
  std::vector<int64_t> target = int_input(context, 1, "shape");
  std::size_t rank = std::max(data.rank(), target.size());
  std::vector<int64_t> in_strides = data.strides();
  std::vector<int64_t> shape(rank), strides(rank, 0);
  for (std::size_t d = 0; d < rank; ++d) {
    std::size_t data_lead = rank - data.rank(), target_lead = rank - target.size();
    int64_t have = d >= data_lead ? data.dim(d - data_lead) : 1;
    int64_t want = d >= target_lead ? target[d - target_lead] : 1;
    if (want < 0) {
      throw Error(fmt::format("{}: shape {} has a negative dimension", context.where(),
                              format_dims(target)));
    }
    if (have == want || want == 1) {
      shape[d] = have;
    } else if (have == 1) {
      shape[d] = want;
    } else {
      throw Error(fmt::format("{}: cannot broadcast {} to shape {}", context.where(),
                              data.describe(), format_dims(target)));
    }
    if (d >= data_lead && have == shape[d]) strides[d] = in_strides[d - data_lead];
  }
  return view_copy(context, shape, strides, 0, {1});
}

std::unique_ptr<Kernel> create_tile(const KernelContext& context) {
  const Tensor& data = context.input(0);
  std::vector<int64_t> repeats = int_input(context, 1, "repeats");
  if (repeats.size() != data.rank()) {
    throw Error(fmt::format("{}: repeats {} should have one entry per axis of {}", context.where(),
                            format_dims(repeats), data.describe()));
  }
  // Tiling is a strided view: each axis d becomes the pair (repeat, d) whose repeat part has
  // stride 0, and row-major order over the pairs is row-major order over the tiled output.
  std::vector<int64_t> in_strides = data.strides();
  std::vector<int64_t> view_shape, view_strides, out_shape;
  for (std::size_t d = 0; d < data.rank(); ++d) {
    if (repeats[d] < 0) {
      throw Error(fmt::format("{}: repeats {} has a negative entry", context.where(),
                              format_dims(repeats)));
    }
    view_shape.insert(view_shape.end(), {repeats[d], data.dim(d)});
    view_strides.insert(view_strides.end(), {0, in_strides[d]});
  }
  plain_byte_size(data.dtype(), view_shape);  // Overflow check before multiplying out.
  for (std::size_t d = 0; d < data.rank(); ++d) out_shape.push_back(repeats[d] * data.dim(d));
  std::size_t element_bytes = element_size(data.dtype());
  int threads = context.threads;
  return make_kernel(
      context, {OutputSpec{data.dtype(), out_shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        strided_copy(element_bytes, view_shape, view_strides, 0, inputs[0]->raw(),
                     outputs[0]->raw(), threads);
      },
      {1});
}

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Source index along one axis for an output index, or -1 where the constant goes.
int64_t pad_source(PadMode mode, int64_t index, int64_t size) {
  if (index >= 0 && index < size) return index;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return std::clamp<int64_t>(index, 0, size - 1);
    case PadMode::kWrap:
      return ((index % size) + size) % size;
    case PadMode::kReflect: {
      if (size == 1) return 0;
      int64_t period = 2 * (size - 1);
      int64_t folded = ((index % period) + period) % period;
      return folded < size ? folded : period - folded;
    }
  }
  return -1;
}

std::unique_ptr<Kernel> create_pad(const KernelContext& context) {
  const Tensor& data = context.input(0);
  auto rank = static_cast<int64_t>(data.rank());
  std::string mode_name = context.node.string_attribute("mode", "constant");
  PadMode mode;
  if (mode_name == "constant") {
    mode = PadMode::kConstant;
  } else if (mode_name == "reflect") {
    mode = PadMode::kReflect;
  } else if (mode_name == "edge") {
    mode = PadMode::kEdge;
  } else if (mode_name == "wrap" && context.opset >= 19) {
    mode = PadMode::kWrap;
  } else {
    throw Error(fmt::format("{}: unknown pad mode '{}' (expected constant, reflect or edge)",
                            context.where(), mode_name));
  }
  std::vector<int64_t> pads, axes;
  std::vector<std::size_t> shape_inputs;
  std::vector<std::byte> attribute_fill;
  if (context.opset < 11) {
    pads = context.node.ints_attribute(context.opset < 2 ? "paddings" : "pads");
    attribute_fill = encode_scalar(context, data.dtype(), context.node.float_attribute("value", 0));
  } else {
    pads = int_input(context, 1, "pads");
    shape_inputs.push_back(1);
    if (context.has_input(3)) {
      axes = int_input(context, 3, "axes");
      shape_inputs.push_back(3);
    }
    if (context.has_input(2) && context.input(2).dtype() != data.dtype()) {
      throw Error(fmt::format("{}: constant_value is {}, the data is {}", context.where(),
                              context.input(2).describe(), data.describe()));
    }
  }
  if (axes.empty()) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  axes = normalize_axes(context, axes, rank);
  if (pads.size() != 2 * axes.size()) {
    throw Error(fmt::format("{}: pads {} should have {} entries (begin and end of {} axes)",
                            context.where(), format_dims(pads), 2 * axes.size(), axes.size()));
  }
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    begin[axes[i]] = pads[i];
    end[axes[i]] = pads[i + axes.size()];
  }
  std::vector<std::vector<int64_t>> tables(rank);
  std::vector<int64_t> out_shape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = data.dim(d);
    int64_t out = 0;
    if (__builtin_add_overflow(size, begin[d], &out) || __builtin_add_overflow(out, end[d], &out) ||
        out > kMaxAxisLength) {
      throw Error(fmt::format("{}: pads {} make axis {} longer than {} elements", context.where(),
                              format_dims(pads), d, kMaxAxisLength));
    }
    if (out < 0) {
      throw Error(fmt::format("{}: pads {} remove more than the {} elements of axis {}",
                              context.where(), format_dims(pads), size, d));
    }
    if (size == 0 && out > 0 && mode != PadMode::kConstant) {
      throw Error(fmt::format("{}: cannot pad the empty axis {} in {} mode", context.where(), d,
                              mode_name));
    }
    out_shape[d] = out;
    tables[d].resize(out);
    for (int64_t o = 0; o < out; ++o) tables[d][o] = pad_source(mode, o - begin[d], size);
  }
  plain_byte_size(data.dtype(), out_shape);
  std::size_t element_bytes = element_size(data.dtype());
  std::vector<int64_t> in_shape = data.shape();
  int threads = context.threads;
  return make_kernel(
      context, {OutputSpec{data.dtype(), out_shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<std::byte> fill = attribute_fill;
        if (fill.empty()) fill.assign(element_bytes, std::byte{0});
        if (inputs.size() > 2 && inputs[2] && inputs[2]->element_count() > 0) {
          std::memcpy(fill.data(), inputs[2]->raw(), element_bytes);
        }
        table_copy(element_bytes, in_shape, tables, fill, inputs[0]->raw(), outputs[0]->raw(),
                   threads);
      },
      shape_inputs);
}

struct BlockLayout {
  int64_t batch, channels, height, width, block;
};

BlockLayout check_4d_blocks(const KernelContext& context) {
  const Tensor& data = context.input(0);
  if (data.rank() != 4) {
    throw Error(
        fmt::format("{}: expected a 4-D NCHW input, got {}", context.where(), data.describe()));
  }
  int64_t block = context.node.int_attribute("blocksize", 0);
  if (block <= 0) {
    throw Error(fmt::format("{}: blocksize should be positive, is {}", context.where(), block));
  }
  return {data.dim(0), data.dim(1), data.dim(2), data.dim(3), block};
}

std::unique_ptr<Kernel> create_depth_to_space(const KernelContext& context) {
  auto [n, c, h, w, b] = check_4d_blocks(context);
  if (c % (b * b) != 0) {
    throw Error(fmt::format("{}: {} channels are not divisible by blocksize² = {}", context.where(),
                            c, b * b));
  }
  std::string mode = context.opset >= 11 ? context.node.string_attribute("mode", "DCR") : "DCR";
  if (mode != "DCR" && mode != "CRD") {
    throw Error(fmt::format("{}: mode should be DCR or CRD, is '{}'", context.where(), mode));
  }
  int64_t depth = c / (b * b), plane = h * w;
  // The output read as [n, depth, h, b_row, w, b_col]: which input channel each pair of block
  // offsets comes from is all that distinguishes the modes.
  int64_t depth_stride = mode == "DCR" ? plane : b * b * plane;
  int64_t row_stride = mode == "DCR" ? b * depth * plane : b * plane;
  int64_t col_stride = mode == "DCR" ? depth * plane : plane;
  std::vector<int64_t> view_shape = {n, depth, h, b, w, b};
  std::vector<int64_t> view_strides = {c * plane, depth_stride, w, row_stride, 1, col_stride};
  const Tensor& data = context.input(0);
  std::size_t element_bytes = element_size(data.dtype());
  int threads = context.threads;
  return make_kernel(
      context, {OutputSpec{data.dtype(), {n, depth, h * b, w * b}, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        strided_copy(element_bytes, view_shape, view_strides, 0, inputs[0]->raw(),
                     outputs[0]->raw(), threads);
      });
}

std::unique_ptr<Kernel> create_space_to_depth(const KernelContext& context) {
  auto [n, c, h, w, b] = check_4d_blocks(context);
  if (h % b != 0 || w % b != 0) {
    throw Error(fmt::format("{}: height {} and width {} should be multiples of blocksize {}",
                            context.where(), h, w, b));
  }
  // The output read as [n, b_row, b_col, c, h / b, w / b].
  std::vector<int64_t> view_shape = {n, b, b, c, h / b, w / b};
  std::vector<int64_t> view_strides = {c * h * w, w, 1, h * w, b * w, b};
  const Tensor& data = context.input(0);
  std::size_t element_bytes = element_size(data.dtype());
  int threads = context.threads;
  return make_kernel(
      context, {OutputSpec{data.dtype(), {n, c * b * b, h / b, w / b}, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        strided_copy(element_bytes, view_shape, view_strides, 0, inputs[0]->raw(),
                     outputs[0]->raw(), threads);
      });
}

std::unique_ptr<Kernel> create_trilu(const KernelContext& context) {
  const Tensor& data = context.input(0);
  if (data.rank() < 2) {
    throw Error(fmt::format("{}: expected a tensor of rank 2 or more, got {}", context.where(),
                            data.describe()));
  }
  bool upper = context.node.int_attribute("upper", 1) != 0;
  int64_t rows = data.dim(data.rank() - 2), columns = data.dim(data.rank() - 1);
  int64_t matrices = rows * columns == 0 ? 0 : data.element_count() / (rows * columns);
  std::size_t element_bytes = element_size(data.dtype());
  std::string where = context.where();
  return make_kernel(
      context, {OutputSpec{data.dtype(), data.shape(), std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        int64_t k = 0;
        if (inputs.size() > 1 && inputs[1]) {
          std::vector<int64_t> values = inputs[1]->to_int64_vector();
          if (values.size() != 1) throw Error(where + ": k should hold one value");
          // Beyond ±(rows + columns) every k keeps all or nothing; clamping avoids overflow.
          k = std::clamp<int64_t>(values[0], -(rows + columns), rows + columns);
        }
        const auto* source = static_cast<const std::byte*>(inputs[0]->raw());
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        std::size_t row_bytes = static_cast<std::size_t>(columns) * element_bytes;
        for (int64_t m = 0; m < matrices; ++m) {
          for (int64_t i = 0; i < rows; ++i) {
            // Kept columns: j - i >= k (upper) or j - i <= k (lower).
            int64_t keep_begin = upper ? std::clamp<int64_t>(i + k, 0, columns) : 0;
            int64_t keep_end = upper ? columns : std::clamp<int64_t>(i + k + 1, 0, columns);
            std::size_t row = static_cast<std::size_t>(m * rows + i) * row_bytes;
            std::memset(target + row, 0, row_bytes);
            if (keep_end > keep_begin) {
              std::size_t skip = static_cast<std::size_t>(keep_begin) * element_bytes;
              std::memcpy(target + row + skip, source + row + skip,
                          static_cast<std::size_t>(keep_end - keep_begin) * element_bytes);
            }
          }
        }
      });
}

}  // namespace

void register_layout_kernels(KernelRegistry& registry) {
  KernelInfo transpose;
  transpose.op_type = "Transpose";
  transpose.dtypes = kMovableTypes;
  transpose.accepts_blocked = first_input;
  transpose.create = guarded(create_transpose);
  registry.add(std::move(transpose));
  add_kernel(registry, "Slice", create_slice);
  add_kernel(registry, "Split", create_split);
  add_kernel(registry, "Expand", create_expand);
  add_kernel(registry, "Tile", create_tile);
  add_kernel(registry, "Pad", create_pad);
  add_kernel(registry, "DepthToSpace", create_depth_to_space);
  add_kernel(registry, "SpaceToDepth", create_space_to_depth);
  add_kernel(registry, "Trilu", create_trilu);
}

}  // namespace cleave::shape
