// The f32 route of int8 convolutions: exact where every partial sum is an integer f32 holds.
#include "runtime/kernels/nn/f32_int8_conv.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/nn/clamped_data.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/staging.h"

namespace cleave::quantize_detail {

namespace {

using conv_detail::ConvProblem;
using dnnl::memory;

// From this many elements the data's conversion and the requantization run on the node's team
// (as the two-part kernels' combining pass: split_weights.cc).
constexpr int64_t kOnTeam = 4096;

template <typename T>
bool rows_exact(const T* w, int64_t row, const std::vector<int32_t>& zero, int64_t largest) {
  for (std::size_t m = 0; m < zero.size(); ++m) {
    int64_t magnitude = 0;
    for (int64_t k = 0; k < row; ++k) {
      magnitude += std::abs(static_cast<int64_t>(w[static_cast<int64_t>(m) * row + k]) - zero[m]);
    }
    if (largest * magnitude >= kExactF32Integers) return false;
  }
  return true;
}

template <typename T>
std::vector<float> centred_weights(const T* w, int64_t row, const std::vector<int32_t>& zero) {
  std::vector<float> out(zero.size() * static_cast<std::size_t>(row));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] =
        static_cast<float>(static_cast<int32_t>(w[i]) - zero[i / static_cast<std::size_t>(row)]);
  }
  return out;
}

memory::format_tag layout_tag(std::size_t rank, bool channels_last) {
  switch (rank) {
    case 3:
      return channels_last ? memory::format_tag::nwc : memory::format_tag::ncw;
    case 4:
      return channels_last ? memory::format_tag::nhwc : memory::format_tag::nchw;
    default:
      return channels_last ? memory::format_tag::ndhwc : memory::format_tag::ncdhw;
  }
}

// x − zero as f32, from plain or channels-last `from` into plain or channels-last `to`, both of
// `positions` spatial positions and `channels` channels per image.
template <typename T>
void convert_data(const T* from, bool from_last, float* to, bool to_last, float zero,
                  int64_t images, int64_t channels, int64_t positions, int threads) {
  if (from_last == to_last) {
    elementwise::parallel_for(
        images * channels * positions, threads,
        [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) to[i] = static_cast<float>(from[i]) - zero;
        },
        kOnTeam);
    return;
  }
  // Transposed, in tiles of kTile positions: the plain side's kTile-element runs of every
  // channel stay in cache while the channels-last side is written (or read) row by row.
  constexpr int64_t kTile = 16;
  const int64_t plane = channels * positions;
  const int64_t tiles = (positions + kTile - 1) / kTile;
  elementwise::parallel_for(
      images * tiles, threads,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t image = t / tiles, first = t % tiles * kTile;
          const int64_t last = std::min(positions, first + kTile);
          const T* in = from + image * plane;
          float* out = to + image * plane;
          if (to_last) {
            for (int64_t q = first; q < last; ++q) {
              for (int64_t c = 0; c < channels; ++c) {
                out[q * channels + c] = static_cast<float>(in[c * positions + q]) - zero;
              }
            }
          } else {
            for (int64_t c = 0; c < channels; ++c) {
              for (int64_t q = first; q < last; ++q) {
                out[c * positions + q] = static_cast<float>(in[q * channels + c]) - zero;
              }
            }
          }
        }
      },
      std::max<int64_t>(1, kOnTeam / std::max<int64_t>(1, channels * kTile)));
}

class F32Int8Conv final : public Kernel, public PackedConstants {
 public:
  F32Int8Conv(const KernelContext& context, const ConvProblem& p, const F32ConvOperands& at,
              bool channels_last, int32_t x_zero, const std::vector<float>& weights)
      : at_(at),
        channels_last_(channels_last),
        data_last_(context.input(at.x).is_blocked()),
        x_zero_(static_cast<float>(x_zero)),
        data_type_(context.input(at.x).dtype()),
        batch_(p.batch),
        channels_in_(p.channels_in),
        channels_out_(p.channels_out),
        in_positions_(volume(context.input(at.x).shape()) /
                      std::max<int64_t>(1, p.batch * p.channels_in)),
        out_positions_(volume(p.output_shape) / std::max<int64_t>(1, p.batch * p.channels_out)),
        threads_(context.threads),
        with_bias_(at.requantized && context.has_input(8)) {
    const memory::format_tag tag = layout_tag(p.output_shape.size(), channels_last);
    const memory::desc src(to_dnnl_dims(context.input(at.x).shape()), memory::data_type::f32, tag);
    const memory::desc dst(to_dnnl_dims(p.output_shape), memory::data_type::f32, tag);
    descriptor_ = conv_detail::make_descriptor<dnnl::convolution_forward>(
        p, src, dst, false, kernel_attr(), context.engine);
    step_ = DnnlStep(dnnl::convolution_forward(descriptor_), descriptor_, context.engine);
    step_.declare(DNNL_ARG_SRC, descriptor_.src_desc());
    step_.declare(DNNL_ARG_WEIGHTS, descriptor_.weights_desc());
    step_.declare(DNNL_ARG_DST, descriptor_.dst_desc());
    const memory::dims weight_dims = p.user_weights.dims();
    weights_ = pack_constant(weights.data(), plain_desc(weight_dims), descriptor_.weights_desc(),
                             context.engine);
    src_bytes_ = descriptor_.src_desc().get_size();
    dst_bytes_ = descriptor_.dst_desc().get_size();
    spec_ = elementwise::plain_output(at.requantized ? requantized_type(context) : DataType::kInt32,
                                      p.output_shape);
    if (channels_last) {
      spec_.layout = recorded_layout(
          memory::desc(to_dnnl_dims(p.output_shape), dnnl_data_type(spec_.dtype, context), tag),
          p.output_shape);
    }
  }

  // oneDNN's reference code is no gain over the int8 paths.
  bool usable() const { return !step_.implementation().starts_with("ref"); }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override {
    return step_.implementation() + " (int8 as exact f32)";
  }
  // The run reads the f32 copy packed at preparation, never the loaded int8 weights: they may
  // go, as the split's halves let them (efficientnet_b1_int8 on AVX2 held both: 59.7 MiB
  // against ORT's 57.4).
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != at_.w;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    auto* src = reinterpret_cast<float*>(staging_buffer(StagingSlot::kRewrittenInput, src_bytes_));
    auto* dst = reinterpret_cast<float*>(staging_buffer(StagingSlot::kFirstSums, dst_bytes_));
    const Tensor& x = *inputs[at_.x];
    if (data_type_ == DataType::kUInt8) {
      convert_data(x.data<uint8_t>(), data_last_, src, channels_last_, x_zero_, batch_,
                   channels_in_, in_positions_, threads_);
    } else {
      convert_data(x.data<int8_t>(), data_last_, src, channels_last_, x_zero_, batch_, channels_in_,
                   in_positions_, threads_);
    }
    step_.set(DNNL_ARG_SRC, src);
    step_.set(DNNL_ARG_WEIGHTS, weights_->data());
    step_.set(DNNL_ARG_DST, dst);
    step_.execute(stream);
    stream.wait();
    write_sums(inputs, dst, *outputs[0]);
  }

 private:
  // The f32 sums are integers: converted exactly, then written as the int8 path writes its
  // int32 sums (with the bias, requantized).
  void write_sums(const std::vector<const Tensor*>& inputs, const float* dst, Tensor& output) {
    const int64_t count = output.element_count();
    if (!at_.requantized) {
      int32_t* out = output.data<int32_t>();
      elementwise::parallel_for(
          count, threads_,
          [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) out[i] = static_cast<int32_t>(dst[i]);
          },
          kOnTeam);
      return;
    }
    write_requantized_f32(requantize_of(inputs, channels_out_), dst, count, channels_out_,
                          channels_last_ ? 1 : out_positions_, output.raw(),
                          with_bias_ ? inputs[8]->data<int32_t>() : nullptr, threads_);
  }

  F32ConvOperands at_;
  bool channels_last_, data_last_;
  float x_zero_;
  DataType data_type_;
  int64_t batch_, channels_in_, channels_out_, in_positions_, out_positions_;
  int threads_;
  bool with_bias_;
  dnnl::convolution_forward::primitive_desc descriptor_;
  DnnlStep step_;
  std::shared_ptr<Buffer> weights_;
  std::size_t src_bytes_ = 0, dst_bytes_ = 0;  // Staged (staging_buffer).
  OutputSpec spec_;
};

}  // namespace

int64_t largest_deviation(DataType type, int32_t zero) {
  if (type == DataType::kUInt8) return std::max<int64_t>(zero, 255 - int64_t{zero});
  return std::max<int64_t>(int64_t{zero} + 128, 127 - int64_t{zero});
}

bool f32_sums_exact(const Tensor& weights, const std::vector<int32_t>& weight_zero,
                    int64_t largest) {
  if (weight_zero.empty()) return false;
  const int64_t row = weights.element_count() / static_cast<int64_t>(weight_zero.size());
  if (weights.dtype() == DataType::kUInt8) {
    return rows_exact(weights.data<uint8_t>(), row, weight_zero, largest);
  }
  return rows_exact(weights.data<int8_t>(), row, weight_zero, largest);
}

void write_requantized_f32(const Requantize& requantize, const float* sums, int64_t count,
                           int64_t channels, int64_t channel_stride, void* out, const int32_t* bias,
                           int threads) {
  auto* bytes = static_cast<uint8_t*>(out);  // u8 or i8: one byte a sum.
  elementwise::parallel_for(
      count, threads,
      [&](int64_t begin, int64_t end) {
        constexpr int64_t kRun = 512;
        int32_t run_sums[kRun];
        for (int64_t i = begin; i < end; i += kRun) {
          const int64_t run = std::min(kRun, end - i);
          for (int64_t k = 0; k < run; ++k) run_sums[k] = static_cast<int32_t>(sums[i + k]);
          write_requantized(requantize, run_sums, run, channels, channel_stride, bytes + i, i,
                            bias);
        }
      },
      kOnTeam);
}

bool f32_route_pays_off(const ConvProblem& p) {
  const int64_t groups = std::max<int64_t>(1, p.groups);
  int64_t taps = 1;
  for (int64_t k : p.kernel) taps *= k;
  const int64_t in = p.channels_in / groups;
  return p.channels_out / groups >= 2 * in && in * taps <= kF32RouteMaxReduction;
}

F32Route parse_f32_route(std::string_view text, std::string_view origin) {
  if (text.empty() || text == "auto") return F32Route::kAuto;
  if (text == "always") return F32Route::kAlways;
  if (text == "never") return F32Route::kNever;
  throw Error(fmt::format(
      "{}: '{}' is no int8 f32 route: expected auto (without VNNI, for data other than the "
      "clamped path's), always (wherever exact) or never",
      origin, text));
}

F32Route f32_route_from_environment() {
  const char* text = std::getenv("CLEAVE_INT8_F32");
  return text ? parse_f32_route(text, "CLEAVE_INT8_F32") : F32Route::kAuto;
}

std::unique_ptr<Kernel> make_f32_int8_conv(const KernelContext& context, const ConvProblem& p,
                                           const F32ConvOperands& at) {
  if (p.transposed || !context.constant[at.w] || !all_constant(context, {at.x_zero, at.w_zero})) {
    return nullptr;
  }
  const Tensor& x = context.input(at.x);
  if (x.is_blocked() && !dense_channels_last(*x.layout(), x.shape())) return nullptr;
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  const int32_t x_zero = zero_point_values(optional(at.x_zero))[0];
  const std::vector<int32_t> w_zero =
      per_channel(zero_point_values(optional(at.w_zero)), p.channels_out);
  const Tensor& w = context.input(at.w);
  if (!f32_sums_exact(w, w_zero, largest_deviation(x.dtype(), x_zero))) return nullptr;
  const int64_t row = w.element_count() / p.channels_out;
  const std::vector<float> weights = w.dtype() == DataType::kUInt8
                                         ? centred_weights(w.data<uint8_t>(), row, w_zero)
                                         : centred_weights(w.data<int8_t>(), row, w_zero);
  // Channels-last where the output may stay so (oneDNN's AVX2 f32 kernels take it), the data
  // transposed in its conversion where it comes plain; a plain output, plain data.
  const bool channels_last = at.requantized && context.blocked_outputs_allowed;
  try {
    auto kernel = std::make_unique<F32Int8Conv>(context, p, at, channels_last, x_zero, weights);
    if (!kernel->usable()) return nullptr;
    return kernel;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::unique_ptr<Kernel> try_f32_int8_conv(const KernelContext& context, const ConvProblem& p,
                                          const F32ConvOperands& at, bool first) {
  const F32Route route = f32_route_from_environment();
  if (route == F32Route::kNever || (route == F32Route::kAlways) != first) return nullptr;
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  if (route == F32Route::kAuto && (dnnl_int8_products_exact() || !f32_route_pays_off(p) ||
                                   (context.input(at.x).dtype() == DataType::kUInt8 &&
                                    zero_point_values(optional(at.x_zero))[0] == 0))) {
    return nullptr;
  }
  return make_f32_int8_conv(context, p, at);
}

}  // namespace cleave::quantize_detail
