// MaxPool (f32, u8, s8), AveragePool, GlobalAveragePool and GlobalMaxPool on oneDNN's pooling
// primitive or cleave's loops; MaxUnpool, their inverse, in plain loops.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/channel_loops.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/pool_loops.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/staging.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

using dnnl::memory;

enum class PoolKind { kMax, kAverage };

/// Average pooling in plain C++ for what oneDNN divides differently: with count_include_pad,
/// ONNX (like PyTorch and ONNX Runtime) counts the explicit pads but not the extra end
/// padding that ceil_mode adds, while oneDNN counts the whole window.
void average_pool_reference(const float* in, float* out, const std::vector<int64_t>& shape,
                            const WindowGeometry& g, const std::vector<int64_t>& output_shape) {
  // Pad to three spatial axes of size 1 so one loop nest covers 1-D to 3-D.
  std::vector<int64_t> size(3, 1), kernel(3, 1), stride(3, 1), begin(3, 0), end(3, 0), outs(3, 1);
  std::size_t n = shape.size() - 2;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t j = 3 - n + i;
    size[j] = shape[i + 2];
    kernel[j] = g.kernel[i];
    stride[j] = g.strides[i];
    begin[j] = g.pads_begin[i];
    end[j] = g.pads_end[i];
    outs[j] = output_shape[i + 2];
  }
  int64_t planes = shape[0] * shape[1];
  int64_t in_plane = size[0] * size[1] * size[2], out_plane = outs[0] * outs[1] * outs[2];
  for (int64_t p = 0; p < planes; ++p) {
    const float* src = in + p * in_plane;
    float* dst = out + p * out_plane;
    for (int64_t od = 0; od < outs[0]; ++od) {
      for (int64_t oh = 0; oh < outs[1]; ++oh) {
        for (int64_t ow = 0; ow < outs[2]; ++ow) {
          int64_t start[3] = {od * stride[0] - begin[0], oh * stride[1] - begin[1],
                              ow * stride[2] - begin[2]};
          int64_t count = 1;
          int64_t lo[3], hi[3];
          for (int a = 0; a < 3; ++a) {
            int64_t stop = std::min(start[a] + kernel[a], size[a] + end[a]);
            count *= stop - start[a];
            lo[a] = std::max<int64_t>(start[a], 0);
            hi[a] = std::min(stop, size[a]);
          }
          double sum = 0;
          for (int64_t d = lo[0]; d < hi[0]; ++d) {
            for (int64_t h = lo[1]; h < hi[1]; ++h) {
              for (int64_t w = lo[2]; w < hi[2]; ++w) sum += src[(d * size[1] + h) * size[2] + w];
            }
          }
          dst[(od * outs[1] + oh) * outs[2] + ow] =
              static_cast<float>(sum / static_cast<double>(count));
        }
      }
    }
  }
}

// The shape cleave's own loops pool: on AVX2, a 2-D float input in 8- or 16-channel blocks,
// channels last or plain (oneDNN's AVX2 pooling kernel is slow on Intel cores, and on plain
// data it has none: its `simple_nchw` took googlenet's pools 64 ms, pool_loops.cc). nullopt
// otherwise.
std::optional<PoolLoopShape> loop_shape(const Tensor& x, const WindowGeometry& g) {
  if (!pool_loops_available() || x.rank() != 4 || x.dtype() != DataType::kFloat) {
    return std::nullopt;
  }
  using Tag = memory::format_tag;
  const memory::desc given = desc_of(x);
  const memory::dims dims = to_dnnl_dims(x.shape());
  PoolLoopShape s;
  const int64_t channels = x.dim(1);
  if (!x.is_blocked()) {
    s.lanes = 1;  // Plain: every channel a plane of its own.
  } else if (given == memory::desc(dims, memory::data_type::f32, Tag::aBcd8b)) {
    s.lanes = 8;
  } else if (given == memory::desc(dims, memory::data_type::f32, Tag::aBcd16b)) {
    s.lanes = 16;
  } else if (given == memory::desc(dims, memory::data_type::f32, Tag::acdb)) {
    s.lanes = channels;
  } else {
    return std::nullopt;
  }
  s.groups = (channels + s.lanes - 1) / s.lanes;
  s.batch = x.dim(0);
  s.in_h = x.dim(2);
  s.in_w = x.dim(3);
  s.out_h = g.output[0];
  s.out_w = g.output[1];
  s.kernel_h = g.kernel[0];
  s.kernel_w = g.kernel[1];
  s.stride_h = g.strides[0];
  s.stride_w = g.strides[1];
  s.dilation_h = g.dilations.empty() ? 1 : g.dilations[0];
  s.dilation_w = g.dilations.empty() ? 1 : g.dilations[1];
  s.pad_top = g.pads_begin[0];
  s.pad_left = g.pads_begin[1];
  s.pad_bottom = g.pads_end[0];
  s.pad_right = g.pads_end[1];
  return s;
}

class PoolKernel : public Kernel {
 public:
  // `global` pools skip pool_loops (their windows are whole planes): a float average runs in
  // global_average_loops, a max on oneDNN's kernel.
  PoolKernel(const KernelContext& context, PoolKind kind, const WindowGeometry& g, bool include_pad,
             bool global = false) {
    const Tensor& x = context.input(0);
    output_count_ = std::max<std::size_t>(1, context.node.outputs.size());
    const memory::data_type type = dnnl_data_type(x.dtype(), context);
    spec_.dtype = x.dtype();
    spec_.shape = {x.dim(0), x.dim(1)};
    spec_.shape.insert(spec_.shape.end(), g.output.begin(), g.output.end());
    if (volume(spec_.shape) == 0) {
      empty_ = true;
      return;
    }
    memory::desc given = desc_of(x);
    std::optional<PoolLoopShape> loops = global ? std::nullopt : loop_shape(x, g);
    bool extra_end_pad = false;
    for (std::size_t i = 0; i < g.output.size(); ++i)
      extra_end_pad = extra_end_pad || g.dnnl_pads_end[i] > g.pads_end[i];
    if (!loops && kind == PoolKind::kAverage && include_pad && extra_end_pad) {
      geometry_ = g;
      input_shape_ = x.shape();
      reference_ = true;
      if (x.is_blocked()) {
        to_plain_ = LayoutReorder(given, plain_desc(x.shape()), context.engine);
        plain_input_bytes_ = plain_byte_size(DataType::kFloat, x.shape());
      }
      return;
    }
    memory::desc produced;
    // A global average of floats runs in cleave's own loops: oneDNN's pooling kernel took 2-3x
    // ONNX Runtime's time on EfficientNet's squeeze-and-excitation pools (25 against 9 us at
    // 1536x7x7, one AVX-512 thread).
    std::optional<ChannelRows> rows;
    std::optional<memory::desc> rows_layout;
    if (global && kind == PoolKind::kAverage && x.dtype() == DataType::kFloat) {
      rows = channel_rows_of(x);
      if (rows) rows_layout = same_layout_for(given, spec_.shape);
    }
    if (rows && rows_layout) {
      rows_ = rows;
      threads_ = context.threads;
      produced = *rows_layout;
      implementation_ = "cleave:" + vector_isa_name(vector_isa());
    } else if (loops) {
      loops_ = loops;
      loop_kind_ = kind == PoolKind::kMax ? PoolLoopKind::kMax
                   : include_pad          ? PoolLoopKind::kAverageIncludePad
                                          : PoolLoopKind::kAverageExcludePad;
      threads_ = context.threads;
      produced = *same_layout_for(given, spec_.shape);
      implementation_ = "cleave:avx2";
    } else {
      dnnl::algorithm algorithm = kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                  : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                : dnnl::algorithm::pooling_avg_exclude_padding;
      // A blocked input keeps its layout through the pooling (oneDNN pools blocked data in
      // place of the layout); a plain one stays plain.
      memory::desc destination =
          x.is_blocked() ? any_desc(spec_.shape, type) : plain_desc(spec_.shape, type);
      dnnl::pooling_v2_forward::desc desc(
          dnnl::prop_kind::forward_inference, algorithm, given, destination,
          memory::dims(g.strides.begin(), g.strides.end()),
          memory::dims(g.kernel.begin(), g.kernel.end()), g.dnnl_dilations(),
          memory::dims(g.pads_begin.begin(), g.pads_begin.end()),
          memory::dims(g.dnnl_pads_end.begin(), g.dnnl_pads_end.end()));
      dnnl::pooling_v2_forward::primitive_desc descriptor(desc, kernel_attr(), context.engine);
      step_ = DnnlStep(dnnl::pooling_v2_forward(descriptor), descriptor, context.engine);
      step_.declare(DNNL_ARG_SRC, descriptor.src_desc());
      step_.declare(DNNL_ARG_DST, descriptor.dst_desc());
      produced = descriptor.dst_desc();
      implementation_ = step_.implementation();
    }
    std::optional<memory::desc> layout = recorded_layout(produced, spec_.shape);
    if (layout && !context.blocked_outputs_allowed) {
      // Pooled channel blocks of one pixel may already lie in plain order.
      if (!holds_plain_bytes(produced, spec_.shape)) {
        output_bytes_ = produced.get_size();
        output_reorder_ = LayoutReorder(produced, plain_desc(spec_.shape, type), context.engine);
      }
      layout.reset();
    }
    spec_.layout = layout;
  }

  std::string implementation() const override { return implementation_; }
  std::vector<OutputSpec> output_specs() const override {
    std::vector<OutputSpec> specs(output_count_, spec_);
    // An unread Indices output still gets a buffer; nothing is written to it.
    for (std::size_t i = 1; i < specs.size(); ++i)
      specs[i] = {DataType::kInt64, spec_.shape, {}, -1};
    return specs;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    if (reference_) {
      const void* source = inputs[0]->raw();
      if (plain_input_bytes_ > 0) {
        std::byte* staged = staging_buffer(StagingSlot::kInput, plain_input_bytes_);
        to_plain_.run(source, staged, stream);
        stream.wait();
        source = staged;
      }
      average_pool_reference(static_cast<const float*>(source), outputs[0]->data<float>(),
                             input_shape_, geometry_, spec_.shape);
      return;
    }
    void* destination =
        output_bytes_ > 0 ? staging_buffer(StagingSlot::kOutput, output_bytes_) : outputs[0]->raw();
    if (rows_) {
      global_average_loops(static_cast<const float*>(inputs[0]->raw()),
                           static_cast<float*>(destination), *rows_, threads_);
    } else if (loops_) {
      pool_loops(loop_kind_, static_cast<const float*>(inputs[0]->raw()),
                 static_cast<float*>(destination), *loops_, threads_);
    } else {
      step_.set(DNNL_ARG_SRC, inputs[0]->raw());
      step_.set(DNNL_ARG_DST, destination);
      step_.execute(stream);
    }
    if (output_bytes_ > 0) output_reorder_.run(destination, outputs[0]->raw(), stream);
  }

 private:
  OutputSpec spec_;
  std::size_t output_count_ = 1;
  bool empty_ = false;
  DnnlStep step_;
  std::optional<PoolLoopShape> loops_;
  std::optional<ChannelRows> rows_;  // A global average in channel_loops.
  PoolLoopKind loop_kind_ = PoolLoopKind::kMax;
  int threads_ = 1;
  std::string implementation_;
  std::size_t output_bytes_ = 0;  // Staged output (staging_buffer); 0: written in place.
  LayoutReorder output_reorder_;
  bool reference_ = false;
  WindowGeometry geometry_;
  std::vector<int64_t> input_shape_;
  LayoutReorder to_plain_;
  std::size_t plain_input_bytes_ = 0;  // Staged plain input; 0: read as given.
};

void check_pool_input(const KernelContext& context, const Tensor& x) {
  if (x.rank() < 3 || x.rank() > 5) {
    throw UnsupportedError(fmt::format("{}: input {} has rank {}; pooling supports ranks 3 to 5",
                                       context.where(), x.describe(), x.rank()));
  }
}

// Spatial dims padded to three (leading 1s), so one loop nest serves 1-D to 3-D pooling.
std::array<int64_t, 3> three_d(std::span<const int64_t> dims, int64_t fill) {
  std::array<int64_t, 3> out = {fill, fill, fill};
  std::copy(dims.begin(), dims.end(), out.end() - static_cast<std::ptrdiff_t>(dims.size()));
  return out;
}

// Max pooling in plain loops, for what the oneDNN path does not give: the Indices output
// (positions in the whole input tensor, the spatial part row-major or with storage_order=1
// column-major) and element types other than f32, u8 and s8.
template <typename T>
void max_pool_with_indices(const T* in, T* out, int64_t* indices, int64_t planes,
                           const std::array<int64_t, 3>& size, const std::array<int64_t, 3>& outs,
                           const std::array<int64_t, 3>& kernel,
                           const std::array<int64_t, 3>& stride,
                           const std::array<int64_t, 3>& dilation,
                           const std::array<int64_t, 3>& pad, bool column_major) {
  int64_t plane = size[0] * size[1] * size[2];
  int64_t position = 0;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o0 = 0; o0 < outs[0]; ++o0) {
      for (int64_t o1 = 0; o1 < outs[1]; ++o1) {
        for (int64_t o2 = 0; o2 < outs[2]; ++o2, ++position) {
          T best = std::numeric_limits<T>::lowest();
          int64_t best_index = -1, best_position = -1;
          for (int64_t k0 = 0; k0 < kernel[0]; ++k0) {
            int64_t i0 = o0 * stride[0] - pad[0] + k0 * dilation[0];
            if (i0 < 0 || i0 >= size[0]) continue;
            for (int64_t k1 = 0; k1 < kernel[1]; ++k1) {
              int64_t i1 = o1 * stride[1] - pad[1] + k1 * dilation[1];
              if (i1 < 0 || i1 >= size[1]) continue;
              for (int64_t k2 = 0; k2 < kernel[2]; ++k2) {
                int64_t i2 = o2 * stride[2] - pad[2] + k2 * dilation[2];
                if (i2 < 0 || i2 >= size[2]) continue;
                int64_t index = p * plane + (i0 * size[1] + i1) * size[2] + i2;
                if (best_index < 0 || in[index] > best) {
                  best = in[index];
                  best_index = index;
                  best_position =
                      column_major ? p * plane + i0 + (i1 + i2 * size[1]) * size[0] : index;
                }
              }
            }
          }
          out[position] = best;
          if (indices) indices[position] = best_position;
        }
      }
    }
  }
}

std::unique_ptr<Kernel> create_max_pool_with_indices(const KernelContext& context,
                                                     const WindowGeometry& g) {
  const Tensor& x = context.input(0);
  if (x.is_blocked()) {
    throw UnsupportedError(
        fmt::format("{}: MaxPool's Indices output on a oneDNN-blocked input is not supported",
                    context.where()));
  }
  bool column_major = context.node.int_attribute("storage_order", 0) != 0;
  std::span<const int64_t> dims = x.shape();
  std::vector<int64_t> shape = {dims[0], dims[1]};
  shape.insert(shape.end(), g.output.begin(), g.output.end());
  std::array<int64_t, 3> size = three_d(dims.subspan(2), 1), outs = three_d(g.output, 1);
  std::array<int64_t, 3> kernel = three_d(g.kernel, 1), stride = three_d(g.strides, 1);
  std::array<int64_t, 3> dilation = three_d(g.dilations, 1), pad = three_d(g.pads_begin, 0);
  int64_t planes = dims[0] * dims[1];
  DataType type = x.dtype();
  std::vector<OutputSpec> specs = {OutputSpec{type, shape, std::nullopt, -1}};
  if (context.node.outputs.size() > 1) specs.push_back({DataType::kInt64, shape, {}, -1});
  std::unique_ptr<Kernel> kernel_object;
  shape::visit_real_type(context, type, [&](auto typed) {
    using T = decltype(typed);
    kernel_object = shape::make_kernel(
        context, specs,
        [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
          int64_t* indices =
              outputs.size() > 1 && outputs[1] ? outputs[1]->data<int64_t>() : nullptr;
          max_pool_with_indices(inputs[0]->data<T>(), outputs[0]->data<T>(), indices, planes, size,
                                outs, kernel, stride, dilation, pad, column_major);
        });
  });
  return kernel_object;
}

std::unique_ptr<Kernel> create_pool(const KernelContext& context, PoolKind kind) {
  const Tensor& x = context.input(0);
  check_pool_input(context, x);
  std::vector<int64_t> kernel = context.node.ints_attribute("kernel_shape");
  if (kernel.size() != x.rank() - 2) {
    throw Error(fmt::format("{}: kernel_shape [{}] should have {} values", context.where(),
                            fmt::join(kernel, ","), x.rank() - 2));
  }
  if (kind == PoolKind::kAverage && !context.node.ints_attribute("dilations").empty()) {
    std::vector<int64_t> dilations = context.node.ints_attribute("dilations");
    if (std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d != 1; })) {
      throw UnsupportedError(
          fmt::format("{}: dilated AveragePool is not supported", context.where()));
    }
  }
  bool ceil_mode = context.node.int_attribute("ceil_mode", 0) != 0;
  std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
  WindowGeometry g = window_geometry(context, spatial, kernel, ceil_mode);
  // oneDNN max-pools u8 and s8 too (an int8 model's pools, qdq_fusion.h), far faster than the plain
  // loops.
  const bool dnnl_type = x.dtype() == DataType::kFloat || x.dtype() == DataType::kUInt8 ||
                         x.dtype() == DataType::kInt8;
  if (kind == PoolKind::kMax && (output_used(context, 1) || !dnnl_type)) {
    return create_max_pool_with_indices(context, g);
  }
  bool include_pad = context.node.int_attribute("count_include_pad", 0) != 0;
  return std::make_unique<PoolKernel>(context, kind, g, include_pad);
}

std::unique_ptr<Kernel> create_global_pool(const KernelContext& context, PoolKind kind) {
  const Tensor& x = context.input(0);
  check_pool_input(context, x);
  WindowGeometry g;
  std::size_t n = x.rank() - 2;
  g.kernel.assign(x.shape().begin() + 2, x.shape().end());
  g.strides.assign(n, 1);
  g.dilations.assign(n, 1);
  g.pads_begin.assign(n, 0);
  g.pads_end.assign(n, 0);
  g.dnnl_pads_end.assign(n, 0);
  g.output.assign(n, 1);
  return std::make_unique<PoolKernel>(context, kind, g, false, true);
}

// Scatters each input element to the flat output position its index names, zeros elsewhere.
std::unique_ptr<Kernel> create_max_unpool(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& indices = context.input(1);
  if (x.rank() < 3 || indices.shape() != x.shape() || indices.dtype() != DataType::kInt64) {
    throw Error(
        fmt::format("{}: expected an input [N, C, ...] and int64 indices of its shape, got "
                    "{} and {}",
                    context.where(), x.describe(), indices.describe()));
  }
  std::vector<int64_t> shape;
  if (context.has_input(2)) {
    shape = shape::int_input(context, 2, "output_shape");
    if (shape.size() != x.rank()) {
      throw Error(fmt::format("{}: output_shape {} should have the input's rank {}",
                              context.where(), shape::format_dims(shape), x.rank()));
    }
  } else {
    std::size_t spatial = x.rank() - 2;
    std::vector<int64_t> kernel = context.node.ints_attribute("kernel_shape");
    std::vector<int64_t> strides = context.node.ints_attribute("strides");
    std::vector<int64_t> pads = context.node.ints_attribute("pads");
    if (kernel.size() != spatial) {
      throw Error(fmt::format("{}: kernel_shape should have {} values", context.where(), spatial));
    }
    strides.resize(spatial, 1);
    pads.resize(2 * spatial, 0);
    shape = {x.dim(0), x.dim(1)};
    for (std::size_t d = 0; d < spatial; ++d) {
      shape.push_back((x.dim(d + 2) - 1) * strides[d] + kernel[d] - pads[d] - pads[spatial + d]);
    }
  }
  int64_t total = shape::product(shape);
  std::string where = context.where();
  std::size_t element_bytes = element_size(x.dtype());
  return shape::make_kernel(
      context, {OutputSpec{x.dtype(), shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        const int64_t* picks = inputs[1]->data<int64_t>();
        const auto* source = static_cast<const std::byte*>(inputs[0]->raw());
        auto* target = static_cast<std::byte*>(outputs[0]->raw());
        std::memset(target, 0, static_cast<std::size_t>(total) * element_bytes);
        for (int64_t i = 0; i < inputs[0]->element_count(); ++i) {
          if (picks[i] < 0 || picks[i] >= total) {
            throw Error(fmt::format("{}: index {} is outside the output of {} elements", where,
                                    picks[i], total));
          }
          std::memcpy(target + picks[i] * element_bytes, source + i * element_bytes, element_bytes);
        }
      },
      {2});
}

}  // namespace

void register_pool_kernels(KernelRegistry& registry) {
  auto add = [&](std::string op,
                 std::function<std::unique_ptr<Kernel>(const KernelContext&)> create,
                 std::vector<DataType> dtypes = {DataType::kFloat}) {
    KernelInfo info;
    info.op_type = std::move(op);
    info.dtypes = std::move(dtypes);
    info.accepts_blocked = first_input;
    info.create = guarded(std::move(create));
    registry.add(info);
  };
  // The plain max loops take every real type; oneDNN's pooling takes f32, u8 and s8.
  std::vector<DataType> max_types = shape::kNumericTypes;
  std::erase(max_types, DataType::kBool);
  add(
      "MaxPool", [](const KernelContext& c) { return create_pool(c, PoolKind::kMax); }, max_types);
  add("AveragePool", [](const KernelContext& c) { return create_pool(c, PoolKind::kAverage); });
  add("GlobalMaxPool",
      [](const KernelContext& c) { return create_global_pool(c, PoolKind::kMax); });
  add("GlobalAveragePool",
      [](const KernelContext& c) { return create_global_pool(c, PoolKind::kAverage); });
  shape::add_kernel(registry, "MaxUnpool", create_max_unpool, shape::kNumericTypes);
}

}  // namespace cleave
