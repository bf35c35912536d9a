// ConvInteger and QLinearConv: int8 convolutions (any rank, groups, dilations, pads) as int32
// sums or requantized to u8/i8.
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/int8_implementation.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/math/split_weights.h"
#include "runtime/kernels/math/widened_int8.h"
#include "runtime/kernels/nn/clamped_data.h"
#include "runtime/kernels/nn/conv1d_windows.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/kernels/nn/f32_int8_conv.h"
#include "runtime/kernels/nn/quantized_conv_loops.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/staging.h"

namespace cleave {

namespace {

using conv_detail::ConvProblem;
using conv_detail::int8_geometry_of;
using conv_detail::Int8Geometry;
using elementwise::make_kernel;
using elementwise::plain_output;
using quantize_detail::all_constant;
using quantize_detail::check_8_bit;
using quantize_detail::check_zero_point;
using quantize_detail::per_channel;
using quantize_detail::zero_point_values;

// Where a node keeps its operands: data, weights and their zero points.
struct Operands {
  std::size_t x = 0, w = 1, x_zero = 2, w_zero = 3;
};

ConvProblem problem_of(const KernelContext& context, const Operands& at) {
  const Tensor& x = context.input(at.x);
  const Tensor& w = context.input(at.w);
  check_8_bit(context, x.dtype(), "the input");
  check_8_bit(context, w.dtype(), "the weights");
  KernelContext conv = context;  // conv_problem reads data and weights at inputs 0 and 1.
  conv.inputs = {&x, &w};
  conv.constant = {context.constant[at.x], context.constant[at.w]};
  ConvProblem p = conv_detail::conv_problem(conv);
  if (p.kernel.size() > 3) {
    throw UnsupportedError(fmt::format("{}: {}-D convolutions are not supported (1-D to 3-D are)",
                                       context.where(), p.kernel.size()));
  }
  check_zero_point(context, at.x_zero, 1, "the input zero point");
  check_zero_point(context, at.w_zero, p.channels_out, "the weight zero point");
  return p;
}

void sums_of(const Int8Geometry& g, const Operands& at, const std::vector<const Tensor*>& inputs,
             const int32_t* bias, int32_t* sums, int threads) {
  auto optional = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  const int32_t x_zero = zero_point_values(optional(at.x_zero))[0];
  const std::vector<int32_t> w_zero =
      per_channel(zero_point_values(optional(at.w_zero)), g.channels_out);
  conv_detail::int8_conv_sums(g, *inputs[at.x], *inputs[at.w], x_zero, w_zero, bias, sums, threads);
}

// Products summed into each output: input channels per group x taps.
int64_t reduction(const ConvProblem& p) {
  int64_t taps = 1;
  for (int64_t k : p.kernel) taps *= k;
  return (p.channels_in / p.groups) * taps;
}

int64_t multiply_adds(const ConvProblem& p) {
  return volume(p.output_shape) * reduction(p);
}

// An int8 convolution on oneDNN: u8/s8 data, s8 weights packed once, the data's zero point and
// (QLinearConv) the output scales and zero point as primitive attributes, int32 bias. The data
// comes plain, or in the layout another int8 convolution wrote (channels-last for the int8
// kernels); a u8/s8 output stays in oneDNN's layout where every consumer takes it (another
// int8 convolution), else it and any int32 output are reordered to the plain layout here. On
// resnet18_int8 the reorders around each convolution took 1.0 ms of 7.
class DnnlInt8Conv final : public Kernel, public PackedConstants {
 public:
  // `keep_sums_layout`: int32 sums stay in oneDNN's layout too, for a kernel that reads them.
  DnnlInt8Conv(const KernelContext& context, const ConvProblem& p, const Operands& at,
               DataType output_type, const dnnl::primitive_attr& attr, bool with_bias,
               bool keep_sums_layout = false)
      : with_bias_(with_bias), weights_input_(at.w) {
    using dnnl::memory;
    const Tensor& x = context.input(at.x);
    spec_ = plain_output(output_type, p.output_shape);
    const memory::data_type src_type = dnnl_data_type(x.dtype(), context);
    const memory::data_type dst_type = dnnl_data_type(output_type, context);
    const memory::desc given = desc_of(x);
    const memory::desc dst = any_desc(p.output_shape, dst_type);
    const memory::desc weights(p.user_weights.dims(), memory::data_type::s8,
                               memory::format_tag::any);
    const memory::dims strides(p.strides.begin(), p.strides.end());
    memory::dims dilations;
    for (int64_t d : p.dilations) dilations.push_back(d - 1);
    const memory::dims pads_begin(p.pads_begin.begin(), p.pads_begin.end());
    const memory::dims pads_end(p.pads_end.begin(), p.pads_end.end());
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto algorithm = dnnl::algorithm::convolution_direct;
    const auto operation = [&](const memory::desc& src) {
      if (!with_bias) {
        return dnnl::convolution_forward::desc(prop, algorithm, src, weights, dst, strides,
                                               dilations, pads_begin, pads_end);
      }
      return dnnl::convolution_forward::desc(
          prop, algorithm, src, weights,
          memory::desc({p.channels_out}, memory::data_type::s32, memory::format_tag::x), dst,
          strides, dilations, pads_begin, pads_end);
    };
    const Int8Work work{multiply_adds(p), context.threads, reduction(p)};
    const auto choose = [&](const memory::desc& src) {
      // The descriptor's implementation iterator points at `op`: it lives through the choice.
      const dnnl::convolution_forward::desc op = operation(src);
      return with_chosen_implementation(
          [&] { return dnnl::convolution_forward::primitive_desc(op, attr, context.engine); },
          work);
    };
    dnnl::convolution_forward::primitive_desc descriptor;
    try {
      // A blocked input is already in the layout an int8 kernel chose; a plain one is not
      // asked for as it is (oneDNN's int8 kernels on nchw are its slow ones).
      descriptor = choose(x.is_blocked() ? given : any_desc(x.shape(), src_type));
    } catch (const dnnl::error&) {
      descriptor = choose(any_desc(x.shape(), src_type));
    }
    step_ = DnnlStep(dnnl::convolution_forward(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, descriptor.src_desc());
    step_.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    step_.declare(DNNL_ARG_DST, descriptor.dst_desc());
    if (with_bias) step_.declare(DNNL_ARG_BIAS, descriptor.bias_desc());
    const memory::dims weight_dims = p.user_weights.dims();
    const memory::desc user_weights = plain_desc(weight_dims, memory::data_type::s8);
    // Shared with the kernels that pack the same loaded weights alike (the clamped-data path's
    // two passes: clamped_data.h); weights derived from them (the split's halves) on their own.
    weights_ = pack_constant_input(context, at.w, context.input(at.w).raw(), user_weights,
                                   descriptor.weights_desc());
    weights_layout_ = descriptor.weights_desc();
    if (context.blocked_outputs_allowed && (output_type != DataType::kInt32 || keep_sums_layout)) {
      spec_.layout = recorded_layout(descriptor.dst_desc(), p.output_shape);
    }
    const memory::desc output = spec_.layout ? *spec_.layout : plain_desc(p.output_shape, dst_type);
    to_src_ = LayoutReorder(given, descriptor.src_desc(), context.engine);
    from_dst_ = LayoutReorder(descriptor.dst_desc(), output, context.engine);
    if (to_src_.needed()) src_bytes_ = descriptor.src_desc().get_size();
    if (from_dst_.needed()) dst_bytes_ = descriptor.dst_desc().get_size();
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return step_.implementation(); }
  // The int8 weights run from the packed copy: the loaded ones may go (a weight held once).
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != weights_input_;
  }
  PackedCopy packed_weights() const { return {weights_, weights_layout_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const void* src = inputs[0]->raw();
    if (src_bytes_ > 0) {
      std::byte* staged = staging_buffer(StagingSlot::kInput, src_bytes_);
      to_src_.run(src, staged, stream);
      src = staged;
    }
    void* dst =
        dst_bytes_ > 0 ? staging_buffer(StagingSlot::kOutput, dst_bytes_) : outputs[0]->raw();
    step_.set(DNNL_ARG_SRC, src);
    step_.set(DNNL_ARG_WEIGHTS, weights_->data());
    step_.set(DNNL_ARG_DST, dst);
    if (with_bias_) step_.set(DNNL_ARG_BIAS, inputs[8]->raw());
    step_.execute(stream);
    if (dst_bytes_ > 0) from_dst_.run(dst, outputs[0]->raw(), stream);
  }

 private:
  OutputSpec spec_;
  bool with_bias_ = false;
  std::size_t weights_input_ = 0;
  DnnlStep step_;
  std::shared_ptr<Buffer> weights_;
  dnnl::memory::desc weights_layout_;
  std::size_t src_bytes_ = 0, dst_bytes_ = 0;  // Staged (staging_buffer); 0: none.
  LayoutReorder to_src_, from_dst_;
};

// The loops read plain data; an input that another int8 convolution left in oneDNN's layout is
// reordered to plain first.
class PlainData final : public Kernel {
 public:
  PlainData(std::unique_ptr<Kernel> loops, const KernelContext& context, std::size_t x)
      : loops_(std::move(loops)),
        x_(x),
        plain_(Tensor::allocate(context.input(x).dtype(), context.input(x).shape())),
        reorder_(desc_of(context.input(x)), desc_of(plain_), context.engine) {}
  std::vector<OutputSpec> output_specs() const override { return loops_->output_specs(); }
  std::string implementation() const override { return loops_->implementation(); }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    reorder_.run(inputs[x_]->raw(), plain_.raw(), stream);
    stream.wait();
    std::vector<const Tensor*> plain_inputs = inputs;
    plain_inputs[x_] = &plain_;
    loops_->run(plain_inputs, outputs, stream);
  }

 private:
  std::unique_ptr<Kernel> loops_;
  std::size_t x_;
  Tensor plain_;
  LayoutReorder reorder_;
};

std::unique_ptr<Kernel> with_plain_data(std::unique_ptr<Kernel> loops, const KernelContext& context,
                                        std::size_t x) {
  if (!context.input(x).is_blocked()) return loops;
  return std::make_unique<PlainData>(std::move(loops), context, x);
}

// Two kernels' int32 sums in one layout, combined (and requantized) by the split kernel
// (split_weights.h): `first(keep_layout)` is oneDNN's, `second(layout)` writes its sums in the
// layout the first chose (dense channels-last int32, or none: plain). A requantized output stays
// channels-last where oneDNN chose it and the consumers take it (oneDNN 2.6 pools u8 in nchw with
// its reference code only).
std::unique_ptr<Kernel> two_part_conv(
    const KernelContext& context, const ConvProblem& p, bool requantized,
    quantize_detail::SplitSums how, const std::function<std::unique_ptr<Kernel>(bool)>& first,
    const std::function<std::unique_ptr<Kernel>(const std::optional<dnnl::memory::desc>&)>&
        second) {
  OutputSpec spec = plain_output(
      requantized ? quantize_detail::requantized_type(context) : DataType::kInt32, p.output_shape);
  std::unique_ptr<Kernel> first_sums = first(requantized && context.blocked_outputs_allowed);
  if (!first_sums) return nullptr;
  bool channels_last = false;
  std::optional<dnnl::memory::desc> sums_layout;
  // A copy: output_specs() returns its specs by value.
  if (const std::optional<dnnl::memory::desc> layout = first_sums->output_specs()[0].layout) {
    channels_last = quantize_detail::dense_channels_last(*layout, p.output_shape);
    if (channels_last) {
      const auto& strides = layout->data.format_desc.blocking.strides;
      const dnnl::memory::dims dims(strides, strides + p.output_shape.size());
      spec.layout = dnnl::memory::desc(to_dnnl_dims(p.output_shape),
                                       dnnl_data_type(spec.dtype, context), dims);
      sums_layout =
          dnnl::memory::desc(to_dnnl_dims(p.output_shape), dnnl::memory::data_type::s32, dims);
    } else {
      first_sums = first(false);
      if (!first_sums) return nullptr;
    }
  }
  std::unique_ptr<Kernel> second_sums = second(sums_layout);
  if (!second_sums || second_sums->output_specs()[0].layout.has_value() != channels_last) {
    return nullptr;
  }
  how.channels = p.channels_out;
  how.channel_stride =
      channels_last ? 1 : volume(p.output_shape) / std::max<int64_t>(1, p.batch * p.channels_out);
  if (requantized && context.has_input(8)) how.bias = 8;
  if (requantized) how.y_scale = 6;
  return quantize_detail::make_split_sums_kernel(std::move(first_sums), std::move(second_sums),
                                                 std::move(spec), how, context.threads);
}

// oneDNN's int32 sums of `context`'s convolution with `weights` in place of its own.
std::unique_ptr<Kernel> dnnl_sums(const KernelContext& context, const ConvProblem& p,
                                  const Operands& at, const Tensor& weights, bool keep_layout) {
  KernelContext with = context;
  with.inputs[at.w] = &weights;
  with.blocked_outputs_allowed = keep_layout;
  return quantize_detail::make_dnnl_int8(
      with, at.x_zero, at.w_zero, false, p.channels_out, 6,
      [&](DataType output, const dnnl::primitive_attr& attr) -> std::unique_ptr<Kernel> {
        return std::make_unique<DnnlInt8Conv>(with, p, at, output, attr, false, true);
      });
}

// Without VNNI (split_weights.h): the two halves' convolutions of u8 data (s8 data would take
// oneDNN's s8s8 path, which halves the weights on such CPUs), nullptr where oneDNN lacks them.
// On AVX2 this took squeezenet1_1_int8 from 880 ms (the loops, exact but scalar) to 2.8 ms.
std::unique_ptr<Kernel> try_split_weights_conv(const KernelContext& context, const ConvProblem& p,
                                               const Operands& at, bool requantized) {
  if (context.input(at.x).dtype() != DataType::kUInt8) return nullptr;
  const auto [high, low] = quantize_detail::split_weights(context.input(at.w));
  quantize_detail::SplitSums how;
  how.weights = at.w;
  return two_part_conv(
      context, p, requantized, how,
      [&](bool keep_layout) { return dnnl_sums(context, p, at, high, keep_layout); },
      [&](const std::optional<dnnl::memory::desc>& layout) {
        return dnnl_sums(context, p, at, low, layout.has_value());
      });
}

// Without VNNI, u8 data of zero point 0 (a ReLU's): one oneDNN pass over the data clamped at 127
// with the whole weights (no int16 pair sum can saturate: clamped_data.h), plus cleave's sums of
// the values above 127. On the held-out int8 models such data had 0.4-6.6% of its values above
// 127 (MAC-weighted); data of other zero points (hardswish's) 22-53%, so they keep the split.
// Where oneDNN's kernel multiplies channels 2j and 2j+1 into one pair sum, only pairs adding up
// to more than 255 are clamped (clamped_scan.h). Plain or dense channels-last data only.
std::unique_ptr<Kernel> try_clamped_data_conv(const KernelContext& context, const ConvProblem& p,
                                              const Operands& at, bool requantized) {
  const Tensor& x = context.input(at.x);
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  if (x.dtype() != DataType::kUInt8 || zero_point_values(optional(at.x_zero))[0] != 0) {
    return nullptr;
  }
  quantize_detail::ExcessSums excess;
  excess.data = at.x;
  if (x.is_blocked()) {
    excess.data_channels_last = quantize_detail::dense_channels_last(*x.layout(), x.shape());
    if (!excess.data_channels_last) return nullptr;
  }
  // The kernels are built on tensors of the data's shape and layout; at run time each pass's
  // copy of the data is the running thread's (staging.h).
  Tensor clamped = Tensor::allocate_uninitialised(DataType::kUInt8, x.shape());
  clamped.set_layout(x.layout());
  KernelContext on_clamped = context;
  on_clamped.inputs[at.x] = &clamped;
  KernelContext on_excess = context;
  on_excess.inputs[at.x] = &clamped;
  quantize_detail::SplitSums how;
  how.weights = at.w;
  how.high_shift = 0;
  how.note = "data split at 127";
  // The clamped pass's packed weights: the excess pass's too (one copy, packed_constants.h),
  // and what the rows read.
  PackedCopy packed;
  // The clamped copy and the list of the values above 127: one pass on the node's team, made by
  // the clamped pass, read by the excess sums.
  auto scan = std::make_shared<quantize_detail::ClampedScan>(
      quantize_detail::scanned_data(x, excess.data_channels_last));
  return two_part_conv(
      context, p, requantized, how,
      [&](bool keep_layout) -> std::unique_ptr<Kernel> {
        std::unique_ptr<Kernel> sums =
            dnnl_sums(on_clamped, p, at, context.input(at.w), keep_layout);
        const auto* conv = dynamic_cast<const DnnlInt8Conv*>(sums.get());
        if (!conv) return nullptr;
        packed = conv->packed_weights();
        scan->set_paired(
            quantize_detail::pairs_adjacent_channels(conv->implementation(), packed.layout, p));
        return quantize_detail::make_clamped_data_kernel(std::move(sums), clamped, at.x, scan,
                                                         context.threads);
      },
      [&](const std::optional<dnnl::memory::desc>& layout) {
        excess.sums_channels_last = layout.has_value();
        OutputSpec sums = plain_output(DataType::kInt32, p.output_shape);
        sums.layout = layout;
        // oneDNN's pass over the excess where it is dense, if its sums come in this layout.
        std::unique_ptr<Kernel> dense =
            dnnl_sums(on_excess, p, at, context.input(at.w), layout.has_value());
        if (dense && dense->output_specs()[0].layout.has_value() != layout.has_value()) {
          dense = nullptr;
        }
        // Paired, one value of a pair of the excess reaches 255: the dense pass must pair the
        // channels as the clamped one does.
        if (dense && scan->paired() && !dense->implementation().starts_with("jit_uni_int8")) {
          dense = nullptr;
        }
        return quantize_detail::make_excess_sums_kernel(p, x, packed, excess, std::move(sums),
                                                        std::move(dense), clamped, scan,
                                                        context.threads);
      });
}

// Below AVX-512, a 1-D convolution of one input channel, unpadded and undilated (an STFT as a
// strided Conv1d), as cleave's widened int16 products: each output position's window is a row
// of the data as it lies, so no im2col (a negative oneDNN pads_end: samples past the last
// window, unread). oneDNN's AVX2 int8 kernels pad the one channel to a
// block and run the long window tap by tap.
std::unique_ptr<Kernel> try_widened_conv(const KernelContext& context, const ConvProblem& p,
                                         const Operands& at, bool requantized) {
  const Tensor& x = context.input(at.x);
  if (!quantize_detail::widened_products_available() || x.is_blocked() || p.kernel.size() != 1 ||
      p.groups != 1 || p.channels_in != 1 || p.pads_begin[0] != 0 || p.pads_end[0] > 0 ||
      p.dilations[0] != 1) {
    return nullptr;
  }
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  for (int32_t zero : zero_point_values(optional(at.w_zero))) {
    if (zero != 0) return nullptr;
  }
  const int64_t width = p.output_shape[2], taps = p.kernel[0];
  quantize_detail::WidenedProduct how;
  how.data = at.x;
  how.weights = at.w;
  how.data_zero = zero_point_values(optional(at.x_zero))[0];
  if (how.data_zero < -128 || how.data_zero > 255) return nullptr;
  how.rows.rows = p.batch * width;
  how.rows.per_batch = width;
  how.rows.batch_stride = x.dim(2);
  how.rows.row_stride = p.strides[0];
  how.rows.out_batch_stride = p.channels_out * width;
  how.rows.out_row_stride = 1;
  how.rows.out_column_stride = width;
  how.channels = p.channels_out;
  how.channel_stride = width;
  if (requantized && context.has_input(8)) how.bias = 8;
  if (requantized) how.y_scale = 6;
  how.name = "int8 conv1d (int16 pairs)";
  return quantize_detail::make_widened_kernel(
      quantize_detail::pack_widened(context.input(at.w).data<int8_t>(), taps, p.channels_out, 1,
                                    taps),
      plain_output(requantized ? quantize_detail::requantized_type(context) : DataType::kInt32,
                   p.output_shape),
      how, context.threads);
}

// The one-channel 1-D convolution as oneDNN's int8 matmul over its windows
// (conv_detail::conv1d_windows) where oneDNN's int8 products are exact (VNNI). Below AVX-512 the
// widened products come first: under AVX2_VNNI this form took 0.665 ms for mel_frontend_int8's
// node, the widened ones 0.49.
std::unique_ptr<Kernel> try_windows_matmul_conv(const KernelContext& context, const ConvProblem& p,
                                                const Operands& at, bool requantized) {
  if (!quantize_detail::dnnl_int8_products_exact() ||
      !conv_detail::conv1d_windows_fit(p, context.input(at.x))) {
    return nullptr;
  }
  try {
    return quantize_detail::make_dnnl_int8(
        context, at.x_zero, at.w_zero, requantized, p.channels_out, 6,
        [&](DataType output, const dnnl::primitive_attr& attr) {
          conv_detail::Conv1dWindowsOperands windows{at.x, at.w, std::nullopt};
          if (requantized && context.has_input(8)) windows.bias = 8;
          return conv_detail::conv1d_windows(context, p, windows, output, attr);
        });
  } catch (const dnnl::error&) {
    return nullptr;  // No int8 matmul of these sizes: the convolution's kernel runs.
  }
}

// s8 data without VNNI, on the u8 split path: x + 128 (its sign bit flipped) with the zero point
// z + 128 has the same differences x − z, so the same sums, padding included (it reads as the
// zero point either way). One byte pass instead of the scalar loops.
class ShiftedData final : public Kernel, public PackedConstants {
 public:
  ShiftedData(std::unique_ptr<Kernel> inner, Tensor shifted, Tensor zero, const Operands& at)
      : inner_(std::move(inner)), shifted_(std::move(shifted)), zero_(std::move(zero)), at_(at) {}
  std::vector<OutputSpec> output_specs() const override { return inner_->output_specs(); }
  std::string implementation() const override {
    return inner_->implementation() + " (s8 data shifted to u8)";
  }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    const auto* packed = dynamic_cast<const PackedConstants*>(inner_.get());
    return !packed || packed->reads_at_run(input);
  }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const auto* from = inputs[at_.x]->data<uint8_t>();
    auto* to = shifted_.data<uint8_t>();
    for (int64_t i = 0; i < shifted_.element_count(); ++i) to[i] = from[i] ^ 0x80;
    std::vector<const Tensor*> shifted_inputs = inputs;
    shifted_inputs.resize(std::max(shifted_inputs.size(), at_.x_zero + 1));
    shifted_inputs[at_.x] = &shifted_;
    shifted_inputs[at_.x_zero] = &zero_;
    inner_->run(shifted_inputs, outputs, stream);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  Tensor shifted_, zero_;
  Operands at_;
};

std::unique_ptr<Kernel> try_shifted_data_conv(const KernelContext& context, const ConvProblem& p,
                                              const Operands& at, bool requantized) {
  const Tensor& x = context.input(at.x);
  if (x.is_blocked()) return nullptr;  // The loops reorder it to plain.
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  const int32_t zero = zero_point_values(optional(at.x_zero))[0];
  if (zero < -128 || zero > 127) return nullptr;
  Tensor shifted = Tensor::allocate_uninitialised(DataType::kUInt8, x.shape());
  Tensor shifted_zero = Tensor::allocate(DataType::kUInt8, {});
  shifted_zero.data<uint8_t>()[0] = static_cast<uint8_t>(zero + 128);
  KernelContext as_u8 = context;
  as_u8.inputs.resize(std::max(as_u8.inputs.size(), at.x_zero + 1));
  as_u8.constant.resize(as_u8.inputs.size());
  as_u8.inputs[at.x] = &shifted;
  as_u8.inputs[at.x_zero] = &shifted_zero;
  as_u8.constant[at.x_zero] = true;
  std::unique_ptr<Kernel> inner = try_split_weights_conv(as_u8, p, at, requantized);
  if (!inner) return nullptr;
  return std::make_unique<ShiftedData>(std::move(inner), std::move(shifted),
                                       std::move(shifted_zero), at);
}

// Without VNNI, a depthwise convolution (one input and one output channel per group) on
// oneDNN's AVX2/SSE4.1 int8 kernel as it is: that kernel widens a depthwise convolution's data
// and weights to 32 bits and multiplies them with vpmaddwd (its compute_ker_dw), so no int16 pair
// sum can saturate and the split's second pass is not needed. u8 data only: with s8 data its
// outputs differed from the loops' (oneDNN scales s8 data's weights without VNNI, we think; not
// confirmed). Any other implementation (its gemm fallback, the 1x1 kernel) keeps the split. On
// AVX-512 without VNNI its AVX-512 kernel ("jit_int8:avx512_core") is exact on full-range u8 data
// too (int8_dnnl_test.cc, under ONEDNN_MAX_CPU_ISA=AVX512_CORE).
std::unique_ptr<Kernel> try_depthwise_dnnl_conv(const KernelContext& context, const ConvProblem& p,
                                                const Operands& at, bool requantized) {
  if (context.input(at.x).dtype() != DataType::kUInt8 || p.groups == 1 ||
      p.channels_in != p.groups || p.channels_out != p.groups) {
    return nullptr;
  }
  std::unique_ptr<Kernel> kernel = quantize_detail::make_dnnl_int8(
      context, at.x_zero, at.w_zero, requantized, p.channels_out, 6,
      [&](DataType output, const dnnl::primitive_attr& attr) -> std::unique_ptr<Kernel> {
        return std::make_unique<DnnlInt8Conv>(context, p, at, output, attr,
                                              requantized && context.has_input(8));
      });
  if (!kernel || !(kernel->implementation().starts_with("jit_uni_int8:") ||
                   kernel->implementation().starts_with("jit_int8:avx512_core"))) {
    return nullptr;
  }
  return kernel;
}

// The oneDNN kernel of an int8 convolution where oneDNN 2.6 has the form: s8 constant weights
// with zero point 0, constant zero points and scales. nullptr otherwise (or when oneDNN offers
// only its reference code), so the loops run.
std::unique_ptr<Kernel> try_dnnl_int8_conv(const KernelContext& context, const ConvProblem& p,
                                           const Operands& at, bool requantized) {
  if (context.input(at.w).dtype() != DataType::kInt8 || !context.constant[at.w] ||
      !all_constant(context, {at.x_zero, at.w_zero})) {
    return nullptr;
  }
  if (requantized && !all_constant(context, {1, 4, 6, 7, 8})) return nullptr;
  const quantize_detail::F32ConvOperands f32_at{at.x, at.w, at.x_zero, at.w_zero, requantized};
  if (auto kernel = quantize_detail::try_f32_int8_conv(context, p, f32_at, true)) return kernel;
  // oneDNN's AVX2 int8 kernels, with AVX-VNNI too, run the one-channel 1-D convolution tap by
  // tap (mel_frontend_int8 under AVX2_VNNI: 1.33 ms of CPU a run, 0.82 on the widened products);
  // AVX-512 without VNNI has no exact int8 matmul for the windows either.
  if (!isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core) ||
      !quantize_detail::dnnl_int8_products_exact()) {
    if (auto kernel = try_widened_conv(context, p, at, requantized)) return kernel;
  }
  if (auto kernel = try_windows_matmul_conv(context, p, at, requantized)) return kernel;
  if (quantize_detail::int8_products_need_split()) {
    if (auto kernel = try_depthwise_dnnl_conv(context, p, at, requantized)) return kernel;
    if (auto kernel = quantize_detail::try_f32_int8_conv(context, p, f32_at, false)) return kernel;
    if (context.input(at.x).dtype() == DataType::kInt8) {
      return try_shifted_data_conv(context, p, at, requantized);
    }
    if (auto kernel = try_clamped_data_conv(context, p, at, requantized)) return kernel;
    return try_split_weights_conv(context, p, at, requantized);
  }
  return quantize_detail::make_dnnl_int8(
      context, at.x_zero, at.w_zero, requantized, p.channels_out, 6,
      [&](DataType output, const dnnl::primitive_attr& attr) -> std::unique_ptr<Kernel> {
        return std::make_unique<DnnlInt8Conv>(context, p, at, output, attr,
                                              requantized && context.has_input(8));
      });
}

std::unique_ptr<Kernel> create_conv_integer(const KernelContext& context) {
  const Operands at;
  const ConvProblem p = problem_of(context, at);
  if (auto kernel = try_dnnl_int8_conv(context, p, at, false)) return kernel;
  const Int8Geometry g = int8_geometry_of(p, context.input(0));
  const int threads = context.threads;
  return with_plain_data(make_kernel({plain_output(DataType::kInt32, p.output_shape)},
                                     [=](const std::vector<const Tensor*>& inputs,
                                         const std::vector<Tensor*>& outputs, dnnl::stream&) {
                                       sums_of(g, at, inputs, nullptr, outputs[0]->data<int32_t>(),
                                               threads);
                                     }),
                         context, at.x);
}

std::unique_ptr<Kernel> create_qlinear_conv(const KernelContext& context) {
  const Operands at{0, 3, 2, 5};
  const ConvProblem p = problem_of(context, at);
  quantize_detail::check_requantize(context, p.channels_out);
  const bool with_bias = context.has_input(8);
  if (with_bias && (context.input(8).dtype() != DataType::kInt32 ||
                    context.input(8).element_count() != p.channels_out)) {
    throw Error(fmt::format("{}: the bias is {}; expected i32[{}]", context.where(),
                            context.input(8).describe(), p.channels_out));
  }
  if (auto kernel = try_dnnl_int8_conv(context, p, at, true)) return kernel;
  const Int8Geometry g = int8_geometry_of(p, context.input(0));
  const int threads = context.threads;
  const int64_t plane = volume(p.output_shape) / std::max<int64_t>(1, g.batch * g.channels_out);
  auto sums =
      std::make_shared<std::vector<int32_t>>(static_cast<std::size_t>(volume(p.output_shape)));
  return with_plain_data(
      make_kernel({plain_output(quantize_detail::requantized_type(context), p.output_shape)},
                  [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                      dnnl::stream&) {
                    const int32_t* bias = with_bias ? inputs[8]->data<int32_t>() : nullptr;
                    sums_of(g, at, inputs, bias, sums->data(), threads);
                    quantize_detail::write_requantized(
                        quantize_detail::requantize_of(inputs, g.channels_out), sums->data(),
                        static_cast<int64_t>(sums->size()), g.channels_out, plane,
                        outputs[0]->raw());
                  }),
      context, at.x);
}

void add(KernelRegistry& registry, std::string op_type,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.since_opset = 10;
  info.dtypes = {DataType::kUInt8, DataType::kInt8};
  // The data (input 0 of both ops) may come in the layout another int8 convolution wrote.
  info.accepts_blocked = [](std::size_t input) { return input == 0; };
  info.create = guarded(std::move(create));
  registry.add(std::move(info));
}

}  // namespace

void register_quantized_conv_kernels(KernelRegistry& registry) {
  add(registry, "ConvInteger", create_conv_integer);
  add(registry, "QLinearConv", create_qlinear_conv);
}

}  // namespace cleave
