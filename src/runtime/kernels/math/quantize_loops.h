// The element loops of the int8 element-wise kernels (QuantizeLinear, DequantizeLinear,
// com.microsoft QLinearAdd): AVX2 where the CPU has it, scalar otherwise, both giving the same
// bits; the scalar references stay callable so that tests can hold the vector loops to them.
#pragma once

#include <cstdint>

namespace cleave::quantize_loops {

/// y[i] = saturate(round_half_even(x[i] / scale) + zero) for i < count (T: u8 or i8). NaN
/// quantizes to T's lowest value.
template <typename T>
void quantize(const float* x, float scale, int32_t zero, T* y, int64_t count);
template <typename T>
void quantize_reference(const float* x, float scale, int32_t zero, T* y, int64_t count);

/// y[i] = (x[i] - zero) * scale for i < count (T: u8, i8 or i32).
template <typename T>
void dequantize(const T* x, float scale, int32_t zero, float* y, int64_t count);
template <typename T>
void dequantize_reference(const T* x, float scale, int32_t zero, float* y, int64_t count);

/// ONNX Runtime's QLinearAdd arithmetic (its AVX2 kernel): c = a·ratio_a + b·ratio_b + fixed in
/// float, with ratio_a = a_scale / c_scale, ratio_b = b_scale / c_scale and
/// fixed = c_zero - fma(ratio_a, a_zero, ratio_b·b_zero), b's term fused first, then a's (two
/// fused multiply-adds); then rounded half to even and saturated. A broadcast operand (one
/// value over a run) goes into the fixed part instead (a multiply, then an add). This rounds a
/// few values differently from the exact (a_f + b_f) / c_scale; ONNX Runtime runs it for every
/// QDQ Add it fuses, so cleave does too, to give its bits.
struct AddRatios {
  float a = 0, b = 0, fixed = 0;
};
AddRatios add_ratios(float a_scale, int32_t a_zero, float b_scale, int32_t b_zero, float c_scale,
                     int32_t c_zero);

/// out[i] = QLinearAdd(a[i·a_step], b[i·b_step]) for i < count, where a step is 1 (a run of
/// values) or 0 (one value broadcast over the run); T: u8 or i8.
template <typename T>
void qlinear_add(const T* a, int64_t a_step, const T* b, int64_t b_step, const AddRatios& ratios,
                 T* out, int64_t count);
template <typename T>
void qlinear_add_reference(const T* a, int64_t a_step, const T* b, int64_t b_step,
                           const AddRatios& ratios, T* out, int64_t count);

}  // namespace cleave::quantize_loops
