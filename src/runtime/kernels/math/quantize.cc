// QuantizeLinear, DequantizeLinear (per tensor and per axis) and DynamicQuantizeLinear, and the
// scale, zero-point and requantization helpers the int8 product kernels share.
#include <fmt/core.h>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_loops.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace quantize_detail {

namespace {

void check_count(const KernelContext& context, const Tensor& t, int64_t count, const char* what) {
  if (t.element_count() == 1 || (t.rank() == 1 && t.dim(0) == count)) return;
  throw Error(fmt::format("{}: {} is {}; expected one value or {} (one per channel)",
                          context.where(), what, t.describe(), count));
}

// One requantized sum, without branches so that the loops below vectorise: the product is
// clamped to +-2^22 (far past the 8-bit range; NaN goes to the low end), then rounded half to
// even as nearbyint does in the default mode, by adding and taking away 1.5·2^23 (glibc's
// nearbyint saves and restores the floating-point environment: most of a requantization).
template <typename T>
inline T requantized(int32_t sum, float multiplier, float zero) {
  constexpr float kShift = 12582912.0f, kBound = 4194304.0f;
  const float scaled = std::min(kBound, std::max(-kBound, static_cast<float>(sum) * multiplier));
  const float value = ((scaled + kShift) - kShift) + zero;
  const auto low = static_cast<float>(std::numeric_limits<T>::lowest());
  const auto high = static_cast<float>(std::numeric_limits<T>::max());
  return static_cast<T>(std::min(high, std::max(low, value)));
}

// Four requantized sums with SSE2: cvtps2dq rounds half to even (the default mode), and the
// saturating packs clamp to T's range.
template <typename T>
inline void requantized4(const int32_t* sums, __m128 multipliers, __m128i zero, T* out) {
  const __m128 bound = _mm_set1_ps(4194304.0f);
  __m128 scaled = _mm_mul_ps(
      _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sums))), multipliers);
  scaled = _mm_min_ps(_mm_max_ps(scaled, _mm_sub_ps(_mm_setzero_ps(), bound)), bound);  // NaN: low.
  const __m128i words = _mm_packs_epi32(_mm_add_epi32(_mm_cvtps_epi32(scaled), zero), zero);
  const __m128i bytes =
      std::is_same_v<T, uint8_t> ? _mm_packus_epi16(words, words) : _mm_packs_epi16(words, words);
  const int32_t four = _mm_cvtsi128_si32(bytes);
  std::memcpy(out, &four, sizeof four);
}

// Eight requantized sums (+ per-lane bias) with AVX2: requantized4's steps on 8 lanes, then its
// packs on the two halves, so that every lane takes the same operations (the same bits).
template <typename T>
__attribute__((target("avx2"))) inline void requantized8(const int32_t* sums, __m256i bias,
                                                         __m256 multipliers, __m256i zero, T* out) {
  const __m256 bound = _mm256_set1_ps(4194304.0f);
  const __m256i with_bias =
      _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums)), bias);
  __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(with_bias), multipliers);
  scaled = _mm256_min_ps(_mm256_max_ps(scaled, _mm256_sub_ps(_mm256_setzero_ps(), bound)), bound);
  const __m256i shifted = _mm256_add_epi32(_mm256_cvtps_epi32(scaled), zero);
  const __m128i words =
      _mm_packs_epi32(_mm256_castsi256_si128(shifted), _mm256_extracti128_si256(shifted, 1));
  const __m128i bytes =
      std::is_same_v<T, uint8_t> ? _mm_packus_epi16(words, words) : _mm_packs_epi16(words, words);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
}

// The channels-last and plain loops of requantize_into, 8 sums at a time.
template <typename T>
__attribute__((target("avx2"))) int64_t requantize_avx2(const Requantize& r, const int32_t* sums,
                                                        int64_t count, int64_t channels,
                                                        int64_t channel_stride, int64_t first,
                                                        const int32_t* bias, T* out) {
  const __m256i zeros = _mm256_set1_epi32(r.zero_point);
  const float* multipliers = r.multipliers.data();
  const float zero = static_cast<float>(r.zero_point);
  int64_t i = 0;
  if (channel_stride == 1) {
    for (int64_t channel = first % channels; i < count; channel = 0) {
      const int64_t n = std::min(count - i, channels - channel);
      int64_t k = 0;
      for (; k + 8 <= n; k += 8) {
        const __m256i add =
            bias ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + channel + k))
                 : _mm256_setzero_si256();
        requantized8(sums + i + k, add, _mm256_loadu_ps(multipliers + channel + k), zeros,
                     out + i + k);
      }
      for (; k < n; ++k) {
        out[i + k] = requantized<T>(sums[i + k] + (bias ? bias[channel + k] : 0),
                                    multipliers[channel + k], zero);
      }
      i += n;
    }
    return count;
  }
  int64_t channel = (first / channel_stride) % channels;
  for (int64_t left = channel_stride - first % channel_stride; i < count; left = channel_stride) {
    const int64_t n = std::min(count - i, left);
    const float multiplier = multipliers[channel];
    const int32_t add = bias ? bias[channel] : 0;
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      requantized8(sums + i + k, _mm256_set1_epi32(add), _mm256_set1_ps(multiplier), zeros,
                   out + i + k);
    }
    for (; k < n; ++k) out[i + k] = requantized<T>(sums[i + k] + add, multiplier, zero);
    i += n;
    channel = channel + 1 == channels ? 0 : channel + 1;
  }
  return count;
}

template <typename T>
void requantize_into(const Requantize& r, const int32_t* sums, int64_t count, int64_t channels,
                     int64_t channel_stride, int64_t first, const int32_t* bias, T* out) {
  if (vector_isa() != VectorIsa::kBaseline) {
    requantize_avx2(r, sums, count, channels, channel_stride, first, bias, out);
    return;
  }
  const auto zero = static_cast<float>(r.zero_point);
  const __m128i zeros = _mm_set1_epi32(r.zero_point);
  const float* multipliers = r.multipliers.data();
  int64_t i = 0;
  if (channel_stride == 1) {  // Channels-last: runs across the channels.
    for (int64_t channel = first % channels; i < count; channel = 0) {
      const int64_t n = std::min(count - i, channels - channel);
      int64_t k = 0;
      if (!bias) {
        for (; k + 4 <= n; k += 4) {
          requantized4(sums + i + k, _mm_loadu_ps(multipliers + channel + k), zeros, out + i + k);
        }
      }
      for (; k < n; ++k) {
        out[i + k] = requantized<T>(sums[i + k] + (bias ? bias[channel + k] : 0),
                                    multipliers[channel + k], zero);
      }
      i += n;
    }
    return;
  }
  int64_t channel = (first / channel_stride) % channels;
  for (int64_t left = channel_stride - first % channel_stride; i < count; left = channel_stride) {
    const int64_t n = std::min(count - i, left);
    const float multiplier = multipliers[channel];
    const int32_t add = bias ? bias[channel] : 0;
    int64_t k = 0;
    if (!bias) {
      for (; k + 4 <= n; k += 4) {
        requantized4(sums + i + k, _mm_set1_ps(multiplier), zeros, out + i + k);
      }
    }
    for (; k < n; ++k) out[i + k] = requantized<T>(sums[i + k] + add, multiplier, zero);
    i += n;
    channel = channel + 1 == channels ? 0 : channel + 1;
  }
}

}  // namespace

void check_scale(const KernelContext& context, std::size_t input, int64_t count, const char* what) {
  const Tensor& scale = context.input(input);
  if (scale.dtype() != DataType::kFloat) {
    throw UnsupportedError(fmt::format("{}: {} of type {} is not supported (f32 is)",
                                       context.where(), what, dtype_name(scale.dtype())));
  }
  check_count(context, scale, count, what);
}

void check_zero_point(const KernelContext& context, std::size_t input, int64_t count,
                      const char* what) {
  if (!context.has_input(input)) return;
  const Tensor& zero = context.input(input);
  const DataType type = zero.dtype();
  if (type != DataType::kUInt8 && type != DataType::kInt8 && type != DataType::kInt32) {
    throw UnsupportedError(fmt::format("{}: {} of type {} is not supported (u8, i8, i32 are)",
                                       context.where(), what, dtype_name(type)));
  }
  check_count(context, zero, count, what);
}

bool dnnl_int8_products_exact() {
  const dnnl::cpu_isa isa = effective_isa();
  return isa_includes(isa, dnnl::cpu_isa::avx512_core_vnni) ||
         isa_includes(isa, dnnl::cpu_isa::avx2_vnni);
}

void check_8_bit(const KernelContext& context, DataType type, const char* what) {
  if (type != DataType::kUInt8 && type != DataType::kInt8) {
    throw UnsupportedError(fmt::format("{}: {} of type {} is not supported (u8 and i8 are)",
                                       context.where(), what, dtype_name(type)));
  }
}

std::vector<float> scale_values(const Tensor& scale) {
  const auto values = scale.values<float>();
  return {values.begin(), values.end()};
}

std::vector<int32_t> zero_point_values(const Tensor* zero_point) {
  if (!zero_point) return {0};
  switch (zero_point->dtype()) {
    case DataType::kUInt8: {
      const auto v = zero_point->values<uint8_t>();
      return {v.begin(), v.end()};
    }
    case DataType::kInt8: {
      const auto v = zero_point->values<int8_t>();
      return {v.begin(), v.end()};
    }
    default: {
      const auto v = zero_point->values<int32_t>();
      return {v.begin(), v.end()};
    }
  }
}

void check_requantize(const KernelContext& context, int64_t channels, std::size_t y_scale) {
  check_scale(context, 1, 1, "the input scale");
  check_scale(context, 4, channels, "the weight scale");
  check_scale(context, y_scale, 1, "the output scale");
  check_zero_point(context, y_scale + 1, 1, "the output zero point");
  check_8_bit(context, requantized_type(context, y_scale), "the output zero point");
}

DataType requantized_type(const KernelContext& context, std::size_t y_scale) {
  return context.has_input(y_scale + 1) ? context.input(y_scale + 1).dtype() : DataType::kUInt8;
}

Requantize requantize_of(const std::vector<const Tensor*>& inputs, int64_t channels,
                         std::size_t y_scale) {
  const float a = inputs[1]->data<float>()[0];
  const std::vector<float> b = per_channel(scale_values(*inputs[4]), channels);
  const float y = inputs[y_scale]->data<float>()[0];
  const Tensor* zero = inputs.size() > y_scale + 1 ? inputs[y_scale + 1] : nullptr;
  Requantize r;
  r.type = zero ? zero->dtype() : DataType::kUInt8;
  r.zero_point = zero_point_values(zero)[0];
  r.multipliers.resize(static_cast<std::size_t>(channels));
  // As ONNX Runtime requantizes: one float multiplier per channel.
  for (int64_t c = 0; c < channels; ++c) r.multipliers[c] = a * b[c] / y;
  return r;
}

void write_requantized(const Requantize& requantize, const int32_t* sums, int64_t count,
                       int64_t channels, int64_t channel_stride, void* out, int64_t first,
                       const int32_t* bias) {
  if (requantize.type == DataType::kUInt8) {
    requantize_into(requantize, sums, count, channels, channel_stride, first, bias,
                    static_cast<uint8_t*>(out));
  } else {
    requantize_into(requantize, sums, count, channels, channel_stride, first, bias,
                    static_cast<int8_t*>(out));
  }
}

namespace {

// `attr` with y's zero point on the destination, which every oneDNN 2.6 x64 int8 convolution
// and matmul kernel (jit, brgemm, gemm post-processing) adds in f32 after the post-ops and
// before saturating and converting. A round post-op first rounds half to even (vroundps in
// MXCSR's mode, nearest even by default) as ONNX does, so the zero point is added to an
// integer, exactly; without it, x.5 + an odd zero point would round the other way.
dnnl::primitive_attr with_destination_zero_point(dnnl::primitive_attr attr, int32_t zero_point) {
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_round, 0.0f, 0.0f);
  attr.set_post_ops(ops);
  attr.set_zero_points(DNNL_ARG_DST, 0, {zero_point});
  return attr;
}

}  // namespace

std::unique_ptr<Kernel> make_dnnl_int8(const KernelContext& context, std::size_t data_zero,
                                       std::size_t weight_zero, bool requantized, int64_t channels,
                                       std::size_t y_scale, const MakeDnnlInt8& make) {
  auto optional = [&](std::size_t i) { return context.has_input(i) ? context.inputs[i] : nullptr; };
  for (int32_t zero : zero_point_values(optional(weight_zero))) {
    if (zero != 0) return nullptr;
  }
  dnnl::primitive_attr attr = kernel_attr();
  const int32_t data_zero_point = zero_point_values(optional(data_zero))[0];
  if (data_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {data_zero_point});
  DataType output = DataType::kInt32;
  if (requantized) {
    const Requantize r = requantize_of(context.inputs, channels, y_scale);
    attr.set_output_scales(context.input(4).element_count() == 1 ? 0 : 1 << 1, r.multipliers);
    if (r.zero_point != 0) attr = with_destination_zero_point(attr, r.zero_point);
    output = r.type;
  }
  try {
    std::unique_ptr<Kernel> kernel = make(output, attr);
    if (kernel->implementation().rfind("ref", 0) == 0) return nullptr;
    return kernel;
  } catch (const dnnl::error&) {
    return nullptr;  // A form this oneDNN lacks.
  }
}

}  // namespace quantize_detail

namespace {

using elementwise::make_kernel;
using elementwise::parallel_for;
using elementwise::plain_output;
using quantize_detail::saturate;
using quantize_detail::scale_values;
using quantize_detail::zero_point_values;

// Where a scale applies: the whole tensor (channels = 1), or each index of one axis.
struct AxisSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};

// The split of input 0 that the node's scale (input 1) implies: per tensor for a one-element
// scale, per `axis` (default 1) for a 1-D one. Checks the scale and zero point.
AxisSplit axis_split(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& scale = context.input(1);
  AxisSplit split;
  split.inner = x.element_count();
  if (scale.element_count() != 1 || scale.rank() > 1) {
    const int64_t axis = normalized_axis(context, context.node.int_attribute("axis", 1),
                                         static_cast<int64_t>(x.rank()));
    split.channels = x.dim(axis);
    split.outer = 1;
    for (int64_t d = 0; d < axis; ++d) split.outer *= x.dim(d);
    split.inner = 1;
    for (auto d = static_cast<std::size_t>(axis) + 1; d < x.rank(); ++d) split.inner *= x.dim(d);
  }
  quantize_detail::check_scale(context, 1, split.channels, "the scale");
  quantize_detail::check_zero_point(context, 2, split.channels, "the zero point");
  return split;
}

// Calls body(channel, begin, end) over each run of elements sharing a channel, in parallel.
template <typename Body>
void for_each_channel_run(const AxisSplit& split, int threads, Body body) {
  if (split.outer * split.channels == 1) {  // Per tensor: split the elements themselves.
    parallel_for(split.inner, threads, [&](int64_t begin, int64_t end) { body(0, begin, end); });
    return;
  }
  const int64_t runs = split.outer * split.channels;
  parallel_for(
      runs, threads,
      [&](int64_t begin, int64_t end) {
        for (int64_t run = begin; run < end; ++run) {
          body(run % split.channels, run * split.inner, (run + 1) * split.inner);
        }
      },
      std::max<int64_t>(1, elementwise::kParallelThreshold / std::max<int64_t>(1, split.inner)));
}

// How a (de)quantization reads input 0 and lays out its output: in the input's own layout
// (unpadded_layout_as, per tensor, where consumers take it), else plain, converting a blocked input
// at every run.
struct LayoutChoice {
  OutputSpec output;
  std::shared_ptr<elementwise::PlainInputs> plain;  // Null when the input is read as it is.
};

LayoutChoice choose_layout(const KernelContext& context, const AxisSplit& split, DataType type) {
  const Tensor& x = context.input(0);
  LayoutChoice choice{plain_output(type, x.shape()), nullptr};
  const bool per_tensor = split.outer * split.channels == 1;
  if (per_tensor && context.blocked_outputs_allowed) {
    choice.output.layout = unpadded_layout_as(context, x, type);
  }
  if (x.is_blocked() && !choice.output.layout) {
    choice.plain = std::make_shared<elementwise::PlainInputs>(context);
  }
  return choice;
}

// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point).
template <typename T>
std::unique_ptr<Kernel> make_quantize(const KernelContext& context, DataType type) {
  const AxisSplit split = axis_split(context);
  const int threads = context.threads;
  const LayoutChoice choice = choose_layout(context, split, type);
  return make_kernel({choice.output}, [=, plain = choice.plain](
                                          const std::vector<const Tensor*>& given,
                                          const std::vector<Tensor*>& outputs,
                                          dnnl::stream& stream) {
    const std::vector<const Tensor*>& inputs = plain ? plain->convert(given, stream) : given;
    const std::vector<float> scales = scale_values(*inputs[1]);
    const std::vector<int32_t> zeros = zero_point_values(inputs.size() > 2 ? inputs[2] : nullptr);
    const float* x = inputs[0]->data<float>();
    T* y = outputs[0]->data<T>();
    for_each_channel_run(split, threads, [&](int64_t c, int64_t b, int64_t e) {
      quantize_loops::quantize(x + b, scales[scales.size() == 1 ? 0 : c],
                               zeros[zeros.size() == 1 ? 0 : c], y + b, e - b);
    });
  });
}

// DequantizeLinear: y = (x - zero_point) * scale.
template <typename T>
std::unique_ptr<Kernel> make_dequantize(const KernelContext& context) {
  const AxisSplit split = axis_split(context);
  const int threads = context.threads;
  const LayoutChoice choice = choose_layout(context, split, DataType::kFloat);
  return make_kernel({choice.output}, [=, plain = choice.plain](
                                          const std::vector<const Tensor*>& given,
                                          const std::vector<Tensor*>& outputs,
                                          dnnl::stream& stream) {
    const std::vector<const Tensor*>& inputs = plain ? plain->convert(given, stream) : given;
    const std::vector<float> scales = scale_values(*inputs[1]);
    const std::vector<int32_t> zeros = zero_point_values(inputs.size() > 2 ? inputs[2] : nullptr);
    const T* x = inputs[0]->data<T>();
    float* y = outputs[0]->data<float>();
    for_each_channel_run(split, threads, [&](int64_t c, int64_t b, int64_t e) {
      quantize_loops::dequantize(x + b, scales[scales.size() == 1 ? 0 : c],
                                 zeros[zeros.size() == 1 ? 0 : c], y + b, e - b);
    });
  });
}

// DynamicQuantizeLinear: u8 over [min(0, min x), max(0, max x)].
void dynamic_quantize(const Tensor& input, Tensor& y, Tensor& y_scale, Tensor& y_zero_point) {
  const auto x = input.values<float>();
  float low = 0, high = 0;
  for (float v : x) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  const float scale = (high - low) / 255.0f;
  y_scale.data<float>()[0] = scale;
  if (scale == 0) {  // All zeros: any scale represents them; ONNX's formula would divide by 0.
    y_zero_point.data<uint8_t>()[0] = 0;
    std::fill_n(y.data<uint8_t>(), x.size(), uint8_t{0});
    return;
  }
  const uint8_t zero = saturate<uint8_t>(0.0f - low / scale);
  y_zero_point.data<uint8_t>()[0] = zero;
  quantize_loops::quantize(x.data(), scale, zero, y.data<uint8_t>(),
                           static_cast<int64_t>(x.size()));
}

std::unique_ptr<Kernel> create_quantize(const KernelContext& context) {
  const DataType type = context.has_input(2) ? context.input(2).dtype() : DataType::kUInt8;
  if (context.input(0).dtype() != DataType::kFloat)
    elementwise::throw_unsupported_type(context, context.input(0).dtype());
  quantize_detail::check_8_bit(context, type, "the zero point");
  return type == DataType::kUInt8 ? make_quantize<uint8_t>(context, type)
                                  : make_quantize<int8_t>(context, type);
}

std::unique_ptr<Kernel> create_dequantize(const KernelContext& context) {
  switch (context.input(0).dtype()) {
    case DataType::kUInt8:
      return make_dequantize<uint8_t>(context);
    case DataType::kInt8:
      return make_dequantize<int8_t>(context);
    case DataType::kInt32:
      return make_dequantize<int32_t>(context);
    default:
      elementwise::throw_unsupported_type(context, context.input(0).dtype());
  }
}

std::unique_ptr<Kernel> create_dynamic_quantize(const KernelContext& context) {
  return make_kernel(
      {plain_output(DataType::kUInt8, context.input(0).shape()), plain_output(DataType::kFloat, {}),
       plain_output(DataType::kUInt8, {})},
      [](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
         dnnl::stream&) { dynamic_quantize(*inputs[0], *outputs[0], *outputs[1], *outputs[2]); });
}

void add(KernelRegistry& registry, std::string op_type, int64_t since, std::vector<DataType> types,
         std::function<std::unique_ptr<Kernel>(const KernelContext&)> create,
         bool layout_free = false) {
  KernelInfo info;
  info.op_type = std::move(op_type);
  info.since_opset = since;
  info.dtypes = std::move(types);
  info.create = std::move(create);
  if (layout_free) info.accepts_blocked = first_input;  // choose_layout.
  registry.add(std::move(info));
}

}  // namespace

void register_quantize_kernels(KernelRegistry& registry) {
  add(registry, "QuantizeLinear", 10, {DataType::kFloat}, create_quantize, true);
  add(registry, "DequantizeLinear", 10, {DataType::kUInt8, DataType::kInt8, DataType::kInt32},
      create_dequantize, true);
  add(registry, "DynamicQuantizeLinear", 11, {DataType::kFloat}, create_dynamic_quantize);
}

}  // namespace cleave
