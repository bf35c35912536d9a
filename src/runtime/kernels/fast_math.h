// Vectorised float math the elementwise kernels need beyond oneDNN's eltwise algorithms.
#pragma once

#include <cstdint>

namespace cleave::elementwise {

// out[i] = erf(in[i]) within a few ulp (Eigen's rational approximation), using AVX-512 or
// AVX2 when the CPU has them; `in` may equal `out`.
void erf_float(const float* in, float* out, int64_t count);

}  // namespace cleave::elementwise
