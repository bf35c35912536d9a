// Internal to the int8 convolution kernels: their shapes with up to three spatial dims, and the
// reference loops' exact int32 sums of any u8/s8 data and weights.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/tensor.h"

namespace cleave::conv_detail {

/// Up to three spatial dims, unused ones of size 1, so that one loop nest covers 1-D to 3-D.
struct Int8Geometry {
  int64_t batch = 0, channels_in = 0, channels_out = 0, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, strides{1, 1, 1},
      dilations{1, 1, 1}, pads{0, 0, 0};
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
};

/// The geometry of `p` on data `x` (N, C, spatial...).
Int8Geometry int8_geometry_of(const ConvProblem& p, const Tensor& x);

/// sums[n, m, ...] = bias[m] + Σ (x − x_zero)(w[m] − w_zero[m]) over the window, `x` and `w`
/// plain u8 or s8; padding reads as x_zero, so adds nothing. `bias` may be null.
void int8_conv_sums(const Int8Geometry& g, const Tensor& x, const Tensor& w, int32_t x_zero,
                    const std::vector<int32_t>& w_zero, const int32_t* bias, int32_t* sums,
                    int threads);

}  // namespace cleave::conv_detail
