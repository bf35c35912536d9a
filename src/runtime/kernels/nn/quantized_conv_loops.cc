// The int8 convolutions' reference loops (quantized_conv_loops.h).
#include "runtime/kernels/nn/quantized_conv_loops.h"

#include "runtime/kernels/elementwise.h"

namespace cleave::conv_detail {

namespace {

using elementwise::parallel_for;

// sums[n, m, ...] = bias[m] + Σ (x - x_zero)(w[m] - w_zero[m]) over the window; padding reads
// as x_zero, so contributes nothing.
template <typename X, typename W>
void integer_convolution(const Int8Geometry& g, const X* x, const W* w, int32_t x_zero,
                         const std::vector<int32_t>& w_zero, const int32_t* bias, int32_t* sums,
                         int threads) {
  const int64_t per_group_in = g.channels_in / g.groups;
  const int64_t per_group_out = g.channels_out / g.groups;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  parallel_for(
      g.batch * g.channels_out, threads,
      [&](int64_t begin, int64_t end) {
        std::vector<int32_t> weights(static_cast<std::size_t>(per_group_in * taps));
        for (int64_t job = begin; job < end; ++job) {
          const int64_t n = job / g.channels_out, m = job % g.channels_out;
          const int64_t group = m / per_group_out;
          for (std::size_t i = 0; i < weights.size(); ++i) {
            weights[i] = static_cast<int32_t>(w[m * per_group_in * taps + i]) - w_zero[m];
          }
          const X* image = x + (n * g.channels_in + group * per_group_in) * in_plane;
          int32_t* out = sums + job * out_plane;
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
              for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
                int32_t sum = bias ? bias[m] : 0;
                for (int64_t c = 0; c < per_group_in; ++c) {
                  const X* plane = image + c * in_plane;
                  const int32_t* tap = weights.data() + c * taps;
                  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
                    const int64_t i0 = o0 * g.strides[0] - g.pads[0] + k0 * g.dilations[0];
                    if (i0 < 0 || i0 >= g.in[0]) continue;
                    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
                      const int64_t i1 = o1 * g.strides[1] - g.pads[1] + k1 * g.dilations[1];
                      if (i1 < 0 || i1 >= g.in[1]) continue;
                      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                        const int64_t i2 = o2 * g.strides[2] - g.pads[2] + k2 * g.dilations[2];
                        if (i2 < 0 || i2 >= g.in[2]) continue;
                        const int32_t value =
                            static_cast<int32_t>(plane[(i0 * g.in[1] + i1) * g.in[2] + i2]) -
                            x_zero;
                        sum += value * tap[(k0 * g.kernel[1] + k1) * g.kernel[2] + k2];
                      }
                    }
                  }
                }
                out[(o0 * g.out[1] + o1) * g.out[2] + o2] = sum;
              }
            }
          }
        }
      },
      2);
}

template <typename X>
void sums_with_data(const Int8Geometry& g, const X* x, const Tensor& w, int32_t x_zero,
                    const std::vector<int32_t>& w_zero, const int32_t* bias, int32_t* sums,
                    int threads) {
  if (w.dtype() == DataType::kUInt8) {
    integer_convolution(g, x, w.data<uint8_t>(), x_zero, w_zero, bias, sums, threads);
  } else {
    integer_convolution(g, x, w.data<int8_t>(), x_zero, w_zero, bias, sums, threads);
  }
}

}  // namespace

Int8Geometry int8_geometry_of(const ConvProblem& p, const Tensor& x) {
  Int8Geometry g;
  g.batch = p.batch;
  g.channels_in = p.channels_in;
  g.channels_out = p.channels_out;
  g.groups = p.groups;
  for (std::size_t d = 0; d < p.kernel.size(); ++d) {
    g.in[d] = x.dim(d + 2);
    g.out[d] = p.output_shape[d + 2];
    g.kernel[d] = p.kernel[d];
    g.strides[d] = p.strides[d];
    g.dilations[d] = p.dilations[d];
    g.pads[d] = p.pads_begin[d];
  }
  return g;
}

void int8_conv_sums(const Int8Geometry& g, const Tensor& x, const Tensor& w, int32_t x_zero,
                    const std::vector<int32_t>& w_zero, const int32_t* bias, int32_t* sums,
                    int threads) {
  if (x.dtype() == DataType::kUInt8) {
    sums_with_data(g, x.data<uint8_t>(), w, x_zero, w_zero, bias, sums, threads);
  } else {
    sums_with_data(g, x.data<int8_t>(), w, x_zero, w_zero, bias, sums, threads);
  }
}

}  // namespace cleave::conv_detail
