// Internal to the quantization kernels: scales and zero points as read from inputs, rounding and
// saturation as ONNX defines them, and the requantization of int32 sums.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave::quantize_detail {

/// ONNX rounds half to even (numpy's rint); nearbyint does so in the default rounding mode.
/// The result saturates to T's range, as every quantizing op of ONNX does.
template <typename T>
T saturate(float value) {
  const float rounded = std::nearbyint(value);
  const float low = static_cast<float>(std::numeric_limits<T>::lowest());
  const float high = static_cast<float>(std::numeric_limits<T>::max());
  if (!(rounded >= low)) return std::numeric_limits<T>::lowest();  // Also NaN.
  if (rounded >= high) return std::numeric_limits<T>::max();
  return static_cast<T>(rounded);
}

// Preparation checks (Error or UnsupportedError naming the node, `what` and the value). An
// absent optional input passes. `count` is the number of channels a per-channel input may
// have; 1-element inputs always pass.
void check_scale(const KernelContext& context, std::size_t input, int64_t count, const char* what);
void check_zero_point(const KernelContext& context, std::size_t input, int64_t count,
                      const char* what);
/// Whether each of these inputs is constant or absent (what a oneDNN kernel, whose scales and
/// zero points are fixed at creation, needs).
inline bool all_constant(const KernelContext& context, std::initializer_list<std::size_t> inputs) {
  for (std::size_t i : inputs) {
    if (context.has_input(i) && !context.constant[i]) return false;
  }
  return true;
}
/// Throws UnsupportedError naming the node unless `type` is u8 or i8.
void check_8_bit(const KernelContext& context, DataType type, const char* what);

// Whether oneDNN's int8 convolutions and matmuls give the loops' exact int32 sums here. With
// VNNI (vpdpbusd) they do; without it (AVX2, AVX-512 before VNNI) oneDNN adds u8 x s8 products
// in pairs into saturating int16 (vpmaddubsw), and a capped AVX2 run differed from the loops
// in up to a third of the elements. The loops run there instead.
bool dnnl_int8_products_exact();

// Run-time reads of checked inputs, as one value or one per channel.
std::vector<float> scale_values(const Tensor& scale);
/// {0} for an absent zero point.
std::vector<int32_t> zero_point_values(const Tensor* zero_point);
/// `values` (one, or already `count`) as `count` values.
template <typename T>
std::vector<T> per_channel(std::vector<T> values, int64_t count) {
  if (values.size() == 1) values.resize(static_cast<std::size_t>(count), values[0]);
  return values;
}

/// How int32 sums become the quantized output of QLinearConv / QLinearMatMul: each channel's
/// sum times a_scale·b_scale[channel]/y_scale, rounded, plus y's zero point, saturated.
struct Requantize {
  std::vector<float> multipliers;  ///< One per output channel (or column).
  int32_t zero_point = 0;
  DataType type = DataType::kUInt8;  ///< u8 or i8.
};

/// Checks a QLinear op's scales and output zero point at preparation: input scale at 1,
/// weight scale at 4 (per tensor or `channels` values), output scale and zero point at
/// `y_scale` and `y_scale` + 1 (6 and 7 for the ONNX ops, 7 and 8 for com.microsoft QGemm).
void check_requantize(const KernelContext& context, int64_t channels, std::size_t y_scale = 6);
/// The requantization those inputs describe now (read at run time: they may change).
Requantize requantize_of(const std::vector<const Tensor*>& inputs, int64_t channels,
                         std::size_t y_scale = 6);
/// The output type of a QLinear op: y_zero_point's (u8 when absent).
DataType requantized_type(const KernelContext& context, std::size_t y_scale = 6);

/// Calls visit.template operator()<A, B>() for the u8/i8 types of an int8 product's two
/// operands (data and weights).
template <typename Visitor>
std::unique_ptr<Kernel> visit_operands(DataType a, DataType b, Visitor&& visit) {
  if (a == DataType::kUInt8) {
    return b == DataType::kUInt8 ? visit.template operator()<uint8_t, uint8_t>()
                                 : visit.template operator()<uint8_t, int8_t>();
  }
  return b == DataType::kUInt8 ? visit.template operator()<int8_t, uint8_t>()
                               : visit.template operator()<int8_t, int8_t>();
}

/// Builds an int8 convolution's or matmul's oneDNN kernel, its form checked by the caller:
/// nullptr unless every weight zero point is 0 (else oneDNN 2.6 has no form), or when oneDNN
/// lacks the form or offers only its reference code (then the loops run). The data zero point
/// and, when `requantized`, the output scales of `channels` channels go on the attributes; a
/// non-zero output zero point goes there too, after a round post-op, so that oneDNN rounds half
/// to even before adding it and writes u8/i8 directly (ONNX's order).
/// `make` builds the kernel for an output type and those attributes.
using MakeDnnlInt8 =
    std::function<std::unique_ptr<Kernel>(DataType output, const dnnl::primitive_attr& attr)>;
std::unique_ptr<Kernel> make_dnnl_int8(const KernelContext& context, std::size_t data_zero,
                                       std::size_t weight_zero, bool requantized, int64_t channels,
                                       std::size_t y_scale, const MakeDnnlInt8& make);

/// Writes `count` sums as `requantize.type` into `out`; the channel of sum i is
/// ((first + i) / channel_stride) % channels (`first`: the sums' offset in the whole output).
/// With `bias`, bias[channel] is added to each sum first (int32, as a separate pass would).
void write_requantized(const Requantize& requantize, const int32_t* sums, int64_t count,
                       int64_t channels, int64_t channel_stride, void* out, int64_t first = 0,
                       const int32_t* bias = nullptr);

}  // namespace cleave::quantize_detail
