// Per-channel loops (scale and shift, x op v[c], global average) compiled once per instruction set.
#include "runtime/kernels/channel_loops.h"

#include <algorithm>
#include <array>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/tensor.h"

namespace cleave {

namespace {

// The per-element maps: Op::apply(x, a, b) with a, b the channel's values.
template <bool kRelu>
struct ScaleShift {
  static float apply(float x, float a, float b) {
    const float value = x * a + b;
    if constexpr (kRelu) return value < 0.0f ? 0.0f : value;
    return value;
  }
};
template <ChannelOp kOp>
struct WithChannel {
  static float apply(float x, float v, float) {
    if constexpr (kOp == ChannelOp::kAdd) return x + v;
    if constexpr (kOp == ChannelOp::kSub) return x - v;
    if constexpr (kOp == ChannelOp::kMul) return x * v;
    return x / v;
  }
};

// Units [begin, end) of `shape.rows * shape.pixels`, each one pixel of `lanes` floats. kLanes
// is the block when it is known here (16, 8, 4: the lane loop becomes one vector, and the
// row's values stay in registers), 1 for plain rows (one value for the whole row), 0 for
// channels-last (lanes = C, the lane loop vectorised over the channels).
template <int64_t kLanes, typename Op>
inline void units_body(const float* __restrict__ x, float* __restrict__ out,
                       const float* __restrict__ first, const float* __restrict__ second,
                       const ChannelRows& shape, int64_t begin, int64_t end) {
  const int64_t lanes = kLanes > 0 ? kLanes : shape.lanes;
  for (int64_t unit = begin; unit < end;) {
    const int64_t row = unit / shape.pixels;
    const int64_t count = std::min(end, (row + 1) * shape.pixels) - unit;
    const int64_t group = row % shape.groups;
    const float* in = x + unit * lanes;
    float* to = out + unit * lanes;
    if constexpr (kLanes == 1) {
      const float a = first[group], b = second[group];
      for (int64_t i = 0; i < count; ++i) to[i] = Op::apply(in[i], a, b);
    } else if constexpr (kLanes > 1) {
      float a[kLanes], b[kLanes];
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        a[lane] = first[group * kLanes + lane];
        b[lane] = second[group * kLanes + lane];
      }
      for (int64_t pixel = 0; pixel < count; ++pixel) {
        for (int64_t lane = 0; lane < kLanes; ++lane) {
          to[pixel * kLanes + lane] = Op::apply(in[pixel * kLanes + lane], a[lane], b[lane]);
        }
      }
    } else {
      const float* a = first + group * lanes;
      const float* b = second + group * lanes;
      for (int64_t pixel = 0; pixel < count; ++pixel) {
        const float* pixel_in = in + pixel * lanes;
        float* pixel_out = to + pixel * lanes;
        for (int64_t lane = 0; lane < lanes; ++lane) {
          pixel_out[lane] = Op::apply(pixel_in[lane], a[lane], b[lane]);
        }
      }
    }
    unit += count;
  }
}

// Rows [begin, end): each row's pixels summed per lane in a fixed order, then divided by
// their count. kLanes as in units_body.
template <int64_t kLanes>
inline void average_body(const float* __restrict__ x, float* __restrict__ out,
                         const ChannelRows& shape, int64_t begin, int64_t end) {
  const int64_t lanes = kLanes > 0 ? kLanes : shape.lanes;
  const int64_t pixels = shape.pixels;
  const auto count = static_cast<float>(pixels);
  for (int64_t row = begin; row < end; ++row) {
    const float* in = x + row * pixels * lanes;
    float* to = out + row * lanes;
    if constexpr (kLanes > 1) {
      // Four partial sums (pixel p into p % 4): four independent add chains per lane.
      float sum[4][kLanes] = {};
      int64_t pixel = 0;
      for (; pixel + 4 <= pixels; pixel += 4) {
        for (int64_t k = 0; k < 4; ++k) {
          for (int64_t lane = 0; lane < kLanes; ++lane)
            sum[k][lane] += in[(pixel + k) * kLanes + lane];
        }
      }
      for (int64_t k = 0; pixel < pixels; ++pixel, ++k) {
        for (int64_t lane = 0; lane < kLanes; ++lane) sum[k][lane] += in[pixel * kLanes + lane];
      }
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        to[lane] = ((sum[0][lane] + sum[1][lane]) + (sum[2][lane] + sum[3][lane])) / count;
      }
    } else if constexpr (kLanes == 1) {
      // A plain channel's pixels are contiguous: 16 partial sums (pixel p into p % 16).
      constexpr int64_t kWidth = 16;
      float sum[kWidth] = {};
      int64_t pixel = 0;
      for (; pixel + kWidth <= pixels; pixel += kWidth) {
        for (int64_t k = 0; k < kWidth; ++k) sum[k] += in[pixel + k];
      }
      for (int64_t k = 0; pixel < pixels; ++pixel, ++k) sum[k] += in[pixel];
      for (int64_t width = kWidth / 2; width > 0; width /= 2) {
        for (int64_t k = 0; k < width; ++k) sum[k] += sum[k + width];
      }
      to[0] = sum[0] / count;
    } else {
      // Channels-last: every lane its own chain, the lanes vectorised.
      for (int64_t lane = 0; lane < lanes; ++lane) to[lane] = 0.0f;
      for (int64_t pixel = 0; pixel < pixels; ++pixel) {
        const float* pixel_in = in + pixel * lanes;
        for (int64_t lane = 0; lane < lanes; ++lane) to[lane] += pixel_in[lane];
      }
      for (int64_t lane = 0; lane < lanes; ++lane) to[lane] /= count;
    }
  }
}

using UnitsLoop = void (*)(const float*, float*, const float*, const float*, const ChannelRows&,
                           int64_t, int64_t);
using AverageLoop = void (*)(const float*, float*, const ChannelRows&, int64_t, int64_t);

// One loop per instruction set (the library itself targets baseline x86-64), as fast_math.cc.
#define CLEAVE_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma")))
#define CLEAVE_AVX2 __attribute__((target("avx2,fma")))

template <int64_t kLanes, typename Op>
CLEAVE_AVX512 void units_avx512(const float* x, float* out, const float* a, const float* b,
                                const ChannelRows& shape, int64_t begin, int64_t end) {
  units_body<kLanes, Op>(x, out, a, b, shape, begin, end);
}
template <int64_t kLanes, typename Op>
CLEAVE_AVX2 void units_avx2(const float* x, float* out, const float* a, const float* b,
                            const ChannelRows& shape, int64_t begin, int64_t end) {
  units_body<kLanes, Op>(x, out, a, b, shape, begin, end);
}
template <int64_t kLanes, typename Op>
void units_baseline(const float* x, float* out, const float* a, const float* b,
                    const ChannelRows& shape, int64_t begin, int64_t end) {
  units_body<kLanes, Op>(x, out, a, b, shape, begin, end);
}

template <int64_t kLanes>
CLEAVE_AVX512 void average_avx512(const float* x, float* out, const ChannelRows& shape,
                                  int64_t begin, int64_t end) {
  average_body<kLanes>(x, out, shape, begin, end);
}
template <int64_t kLanes>
CLEAVE_AVX2 void average_avx2(const float* x, float* out, const ChannelRows& shape, int64_t begin,
                              int64_t end) {
  average_body<kLanes>(x, out, shape, begin, end);
}
template <int64_t kLanes>
void average_baseline(const float* x, float* out, const ChannelRows& shape, int64_t begin,
                      int64_t end) {
  average_body<kLanes>(x, out, shape, begin, end);
}

#undef CLEAVE_AVX512
#undef CLEAVE_AVX2

// One switch (ONEDNN_MAX_CPU_ISA) caps these loops and oneDNN's kernels alike.
template <int64_t kLanes, typename Op>
UnitsLoop pick_units() {
  switch (vector_isa()) {
    case VectorIsa::kAvx512:
      return units_avx512<kLanes, Op>;
    case VectorIsa::kAvx2:
      return units_avx2<kLanes, Op>;
    case VectorIsa::kBaseline:
      break;
  }
  return units_baseline<kLanes, Op>;
}

template <int64_t kLanes>
AverageLoop pick_average() {
  switch (vector_isa()) {
    case VectorIsa::kAvx512:
      return average_avx512<kLanes>;
    case VectorIsa::kAvx2:
      return average_avx2<kLanes>;
    case VectorIsa::kBaseline:
      break;
  }
  return average_baseline<kLanes>;
}

// The loop for a lane width: 16, 8, 4 and 1 have their own, any other width the general one.
// Channels-last of 16, 8, 4 or 1 channels is one group of that many lanes: the same loops.
template <typename Loop>
Loop by_lanes(int64_t lanes, const std::array<Loop, 5>& loops) {
  switch (lanes) {
    case 16:
      return loops[0];
    case 8:
      return loops[1];
    case 4:
      return loops[2];
    case 1:
      return loops[3];
    default:
      return loops[4];
  }
}

template <typename Op>
UnitsLoop units_for(int64_t lanes) {
  static const std::array<UnitsLoop, 5> loops = {pick_units<16, Op>(), pick_units<8, Op>(),
                                                 pick_units<4, Op>(), pick_units<1, Op>(),
                                                 pick_units<0, Op>()};
  return by_lanes(lanes, loops);
}

AverageLoop average_for(int64_t lanes) {
  static const std::array<AverageLoop, 5> loops = {pick_average<16>(), pick_average<8>(),
                                                   pick_average<4>(), pick_average<1>(),
                                                   pick_average<0>()};
  return by_lanes(lanes, loops);
}

void run_units(UnitsLoop loop, const float* x, float* out, const float* a, const float* b,
               const ChannelRows& shape, int threads, int64_t min_parallel_floats) {
  const int64_t min_parallel_units = std::max<int64_t>(1, min_parallel_floats / shape.lanes);
  elementwise::parallel_for(
      shape.rows * shape.pixels, threads,
      [&](int64_t begin, int64_t end) { loop(x, out, a, b, shape, begin, end); },
      min_parallel_units);
}

}  // namespace

std::optional<ChannelRows> channel_rows_of(const Tensor& x) {
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t spatial = volume(std::span<const int64_t>(x.shape()).subspan(2));
  if (elementwise::is_channels_last(x)) return ChannelRows{batch, 1, spatial, channels};
  std::optional<int64_t> block = elementwise::channel_block_of(x);
  if (!block) return std::nullopt;
  if (*block == 1 && spatial == 1) return ChannelRows{batch, 1, 1, channels};  // [N, C]
  const int64_t groups = (channels + *block - 1) / *block;
  return ChannelRows{batch * groups, groups, spatial, *block};
}

void scale_shift_loops(const float* x, float* out, const float* scale, const float* shift,
                       const ChannelRows& shape, bool relu, int threads) {
  const UnitsLoop loop =
      relu ? units_for<ScaleShift<true>>(shape.lanes) : units_for<ScaleShift<false>>(shape.lanes);
  // Below this many floats a second thread costs more than it saves (the intra-op team has
  // usually decided already: one thread per 256 KiB moved).
  run_units(loop, x, out, scale, shift, shape, threads, elementwise::kBlockedParallelThreshold);
}

void channel_op_loops(ChannelOp op, const float* x, float* out, const float* values,
                      const ChannelRows& shape, int threads, int64_t min_parallel_floats) {
  UnitsLoop loop = nullptr;
  switch (op) {
    case ChannelOp::kAdd:
      loop = units_for<WithChannel<ChannelOp::kAdd>>(shape.lanes);
      break;
    case ChannelOp::kSub:
      loop = units_for<WithChannel<ChannelOp::kSub>>(shape.lanes);
      break;
    case ChannelOp::kMul:
      loop = units_for<WithChannel<ChannelOp::kMul>>(shape.lanes);
      break;
    case ChannelOp::kDiv:
      loop = units_for<WithChannel<ChannelOp::kDiv>>(shape.lanes);
      break;
  }
  run_units(loop, x, out, values, values, shape, threads, min_parallel_floats);
}

void global_average_loops(const float* x, float* out, const ChannelRows& shape, int threads) {
  const AverageLoop loop = average_for(shape.lanes);
  const int64_t row_floats = std::max<int64_t>(1, shape.pixels * shape.lanes);
  const int64_t min_parallel_rows =
      std::max<int64_t>(1, elementwise::kBlockedParallelThreshold / row_floats);
  elementwise::parallel_for(
      shape.rows, threads, [&](int64_t begin, int64_t end) { loop(x, out, shape, begin, end); },
      min_parallel_rows);
}

}  // namespace cleave
