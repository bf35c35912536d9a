// Vectorised float math the elementwise kernels need beyond oneDNN's eltwise algorithms.
#pragma once

#include <cstdint>

namespace cleave::elementwise {

// out[i] = erf(in[i]) within a few ulp (Eigen's rational approximation), using AVX-512 or
// AVX2 when the CPU has them; `in` may equal `out`.
void erf_float(const float* in, float* out, int64_t count);

// out[i] = in[i] * sigmoid(in[i]) (SiLU) within 1e-5 relative error down to x = -87 (below,
// exp(x) leaves float's normal range and the result is practically 0);
// `in` may equal `out`.
void swish_float(const float* in, float* out, int64_t count);

}  // namespace cleave::elementwise
