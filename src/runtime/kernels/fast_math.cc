// Vectorised float math: one portable body, compiled for several instruction sets and picked
// by what the CPU supports (the library itself targets baseline x86-64).
#include "runtime/kernels/fast_math.h"

#include <algorithm>

namespace cleave::elementwise {

namespace {

// erf(x) = x·P(x²)/Q(x²) on [-4, 4] (Eigen's and XLA's float approximation); beyond that
// float erf is ±1. Branch-free so that compilers vectorise the loops below.
inline float erf_approximation(float value) {
  const float x = std::min(std::max(value, -4.0f), 4.0f);
  const float z = x * x;
  float p = -2.72614225801306e-10f;
  p = p * z + 2.77068142495902e-08f;
  p = p * z - 2.10102402082508e-06f;
  p = p * z - 5.69250639462346e-05f;
  p = p * z - 7.34990630326855e-04f;
  p = p * z - 2.95459980854025e-03f;
  p = p * z - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * z - 2.13374055278905e-04f;
  q = q * z - 1.68282697438203e-03f;
  q = q * z - 7.37332916720468e-03f;
  q = q * z - 1.42647390514189e-02f;
  return std::min(std::max(x * p / q, -1.0f), 1.0f);
}

__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) void erf_avx512(const float* in,
                                                                              float* out,
                                                                              int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = erf_approximation(in[i]);
}

__attribute__((target("avx2,fma"))) void erf_avx2(const float* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = erf_approximation(in[i]);
}

void erf_baseline(const float* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = erf_approximation(in[i]);
}

using FloatLoop = void (*)(const float*, float*, int64_t);

FloatLoop pick(FloatLoop avx512, FloatLoop avx2, FloatLoop baseline) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2;
  return baseline;
}

}  // namespace

void erf_float(const float* in, float* out, int64_t count) {
  static const FloatLoop loop = pick(erf_avx512, erf_avx2, erf_baseline);
  loop(in, out, count);
}

}  // namespace cleave::elementwise
