// The int8 element-wise loops: scalar references and AVX2 versions with the same rounding
// (round half to even, as cvtps2dq does in the default rounding mode) and saturation.
#include "runtime/kernels/math/quantize_loops.h"

#include <immintrin.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/math/quantize_util.h"

namespace cleave::quantize_loops {

namespace {

using quantize_detail::saturate;

// One output of QLinearAdd from one operand run: x·ratio + fixed, fused, rounded, saturated.
template <typename T>
T add_one(float x, float ratio, float fixed) {
  return saturate<T>(std::fma(x, ratio, fixed));
}

template <typename T>
void add_one_sided_reference(const T* x, float ratio, float fixed, T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = add_one<T>(static_cast<float>(x[i]), ratio, fixed);
}

// The AVX2 loops. The library targets baseline x86-64, so only these functions use AVX2;
// callers pick them after checking the CPU (vector_isa, which ONEDNN_MAX_CPU_ISA also caps).
#pragma GCC push_options
#pragma GCC target("avx2,fma")

// Eight int32 values already inside T's range, stored as eight T.
template <typename T>
inline void store8(__m256i values, T* out) {
  const __m128i words =
      _mm_packs_epi32(_mm256_castsi256_si128(values), _mm256_extracti128_si256(values, 1));
  const __m128i bytes =
      std::is_unsigned_v<T> ? _mm_packus_epi16(words, words) : _mm_packs_epi16(words, words);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
}

// Eight T widened to int32.
template <typename T>
inline __m256i load8(const T* in) {
  if constexpr (std::is_same_v<T, int32_t>) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  } else {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in));
    return std::is_unsigned_v<T> ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes);
  }
}

template <typename T>
inline __m256 load8_float(const T* in) {
  return _mm256_cvtepi32_ps(load8(in));
}

// Rounds eight floats half to even after clamping them to T's range (clamping first keeps
// cvtps2dq in range; it commutes with rounding at integer bounds).
template <typename T>
inline void round_store8(__m256 values, T* out) {
  const __m256 low = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::lowest()));
  const __m256 high = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
  store8(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(values, low), high)), out);
}

template <typename T>
void quantize_avx2(const float* x, float scale, int32_t zero, T* y, int64_t count) {
  const __m256 scales = _mm256_set1_ps(scale);
  // The bounds before the zero point is added; maxps returns its second operand for a NaN
  // first one, so NaN becomes the lowest value, as in saturate.
  const __m256 low =
      _mm256_set1_ps(static_cast<float>(int64_t{std::numeric_limits<T>::lowest()} - zero));
  const __m256 high =
      _mm256_set1_ps(static_cast<float>(int64_t{std::numeric_limits<T>::max()} - zero));
  const __m256i zeros = _mm256_set1_epi32(zero);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 q = _mm256_div_ps(_mm256_loadu_ps(x + i), scales);
    const __m256 clamped = _mm256_min_ps(_mm256_max_ps(q, low), high);
    store8(_mm256_add_epi32(_mm256_cvtps_epi32(clamped), zeros), y + i);
  }
  for (; i < count; ++i)
    y[i] = saturate<T>(std::nearbyint(x[i] / scale) + static_cast<float>(zero));
}

template <typename T>
void dequantize_avx2(const T* x, float scale, int32_t zero, float* y, int64_t count) {
  const __m256 scales = _mm256_set1_ps(scale);
  const __m256i zeros = _mm256_set1_epi32(zero);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i centered = _mm256_sub_epi32(load8(x + i), zeros);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(centered), scales));
  }
  for (; i < count; ++i) {
    y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zero) * scale;
  }
}

template <typename T>
void add_avx2(const T* a, const T* b, const AddRatios& r, T* out, int64_t count) {
  const __m256 ratio_a = _mm256_set1_ps(r.a), ratio_b = _mm256_set1_ps(r.b);
  const __m256 fixed = _mm256_set1_ps(r.fixed);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 sum = _mm256_fmadd_ps(load8_float(b + i), ratio_b, fixed);
    round_store8(_mm256_fmadd_ps(load8_float(a + i), ratio_a, sum), out + i);
  }
  for (; i < count; ++i) {
    const float sum = std::fma(static_cast<float>(b[i]), r.b, r.fixed);
    out[i] = add_one<T>(static_cast<float>(a[i]), r.a, sum);
  }
}

template <typename T>
void add_one_sided_avx2(const T* x, float ratio, float fixed, T* out, int64_t count) {
  const __m256 ratios = _mm256_set1_ps(ratio), fixeds = _mm256_set1_ps(fixed);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    round_store8(_mm256_fmadd_ps(load8_float(x + i), ratios, fixeds), out + i);
  }
  for (; i < count; ++i) out[i] = add_one<T>(static_cast<float>(x[i]), ratio, fixed);
}

#pragma GCC pop_options

bool use_avx2() {
  static const bool avx2 = vector_isa() != VectorIsa::kBaseline;
  return avx2;
}

template <typename T>
void add_both_reference(const T* a, const T* b, const AddRatios& r, T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float sum = std::fma(static_cast<float>(b[i]), r.b, r.fixed);
    out[i] = add_one<T>(static_cast<float>(a[i]), r.a, sum);
  }
}

// Both loops share the split into runs: with a broadcast operand, its term joins the fixed
// part (as ONNX Runtime's kernel does for a scalar operand, a taken first).
template <typename T, typename Both, typename OneSided>
void add_runs(const T* a, int64_t a_step, const T* b, int64_t b_step, const AddRatios& r, T* out,
              int64_t count, Both both, OneSided one_sided) {
  if (a_step == 0) {
    const float fixed = r.fixed + static_cast<float>(a[0]) * r.a;
    if (b_step == 0) {
      const T value = add_one<T>(static_cast<float>(b[0]), r.b, fixed);
      for (int64_t i = 0; i < count; ++i) out[i] = value;
      return;
    }
    one_sided(b, r.b, fixed, out, count);
  } else if (b_step == 0) {
    one_sided(a, r.a, r.fixed + static_cast<float>(b[0]) * r.b, out, count);
  } else {
    both(a, b, r, out, count);
  }
}

}  // namespace

template <typename T>
void quantize_reference(const float* x, float scale, int32_t zero, T* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = saturate<T>(std::nearbyint(x[i] / scale) + static_cast<float>(zero));
  }
}

template <typename T>
void quantize(const float* x, float scale, int32_t zero, T* y, int64_t count) {
  if (use_avx2()) {
    quantize_avx2(x, scale, zero, y, count);
  } else {
    quantize_reference(x, scale, zero, y, count);
  }
}

template <typename T>
void dequantize_reference(const T* x, float scale, int32_t zero, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zero) * scale;
  }
}

template <typename T>
void dequantize(const T* x, float scale, int32_t zero, float* y, int64_t count) {
  if (use_avx2()) {
    dequantize_avx2(x, scale, zero, y, count);
  } else {
    dequantize_reference(x, scale, zero, y, count);
  }
}

AddRatios add_ratios(float a_scale, int32_t a_zero, float b_scale, int32_t b_zero, float c_scale,
                     int32_t c_zero) {
  AddRatios r;
  r.a = a_scale / c_scale;
  r.b = b_scale / c_scale;
  // ONNX Runtime's build fuses the first product into the sum (a different rounding, which
  // changes one of the 65,536 operand pairs of mobilenet_v3_small_int8's first residual Add).
  const float zeros = std::fma(r.a, static_cast<float>(a_zero), r.b * static_cast<float>(b_zero));
  r.fixed = static_cast<float>(c_zero) - zeros;
  return r;
}

template <typename T>
void qlinear_add_reference(const T* a, int64_t a_step, const T* b, int64_t b_step,
                           const AddRatios& ratios, T* out, int64_t count) {
  add_runs(a, a_step, b, b_step, ratios, out, count, add_both_reference<T>,
           add_one_sided_reference<T>);
}

template <typename T>
void qlinear_add(const T* a, int64_t a_step, const T* b, int64_t b_step, const AddRatios& ratios,
                 T* out, int64_t count) {
  if (use_avx2()) {
    add_runs(a, a_step, b, b_step, ratios, out, count, add_avx2<T>, add_one_sided_avx2<T>);
  } else {
    qlinear_add_reference(a, a_step, b, b_step, ratios, out, count);
  }
}

#define CLEAVE_QUANTIZE_LOOPS(T)                                                                 \
  template void quantize<T>(const float*, float, int32_t, T*, int64_t);                          \
  template void quantize_reference<T>(const float*, float, int32_t, T*, int64_t);                \
  template void qlinear_add<T>(const T*, int64_t, const T*, int64_t, const AddRatios&, T*,       \
                               int64_t);                                                         \
  template void qlinear_add_reference<T>(const T*, int64_t, const T*, int64_t, const AddRatios&, \
                                         T*, int64_t);
CLEAVE_QUANTIZE_LOOPS(uint8_t)
CLEAVE_QUANTIZE_LOOPS(int8_t)
#undef CLEAVE_QUANTIZE_LOOPS

#define CLEAVE_DEQUANTIZE_LOOPS(T)                                        \
  template void dequantize<T>(const T*, float, int32_t, float*, int64_t); \
  template void dequantize_reference<T>(const T*, float, int32_t, float*, int64_t);
CLEAVE_DEQUANTIZE_LOOPS(uint8_t)
CLEAVE_DEQUANTIZE_LOOPS(int8_t)
CLEAVE_DEQUANTIZE_LOOPS(int32_t)
#undef CLEAVE_DEQUANTIZE_LOOPS

}  // namespace cleave::quantize_loops
