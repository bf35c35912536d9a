// Pooling loops of cleave's own for AVX2: oneDNN 2.6's AVX2 pooling kernel pays a fixed cost
// for every 4 output pixels of 8 channels, which on an Intel core made googlenet's max pools 8x
// their AVX-512 time (docs/results/ort_speed_xeon.md); these loops vectorise over the lanes.
#include "runtime/kernels/nn/pool_loops.h"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "runtime/cpu_isa.h"
#include "runtime/intra_op_team.h"

namespace cleave {

namespace {

// Everything here is compiled for AVX2 (the library itself targets baseline x86-64); callers
// check the CPU first. The threads start outside, in pool_loops, whose OpenMP region is
// outlined from it.
#pragma GCC push_options
#pragma GCC target("avx2,fma")

// The taps of a window along one axis that fall inside the input: [first, last).
struct TapRange {
  int64_t first, last;
};

inline TapRange taps_inside(int64_t start, int64_t kernel, int64_t dilation, int64_t size) {
  if (dilation == 1) {  // Most pools; no division.
    const int64_t first = std::max<int64_t>(0, -start);
    return {first, std::max(first, std::min(kernel, size - start))};
  }
  const int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t last =
      size <= start ? 0 : std::min(kernel, (size - start + dilation - 1) / dilation);
  return {first, std::max(first, last)};
}

// Eight floats as one value (GCC's vector extension): one ymm register. Loops over float arrays
// were left scalar by the vectoriser, and vectors of a template-dependent size or of 16 floats on
// AVX2 were split into scalars; unaligned loads and stores go through memcpy.
typedef float Float8 __attribute__((vector_size(32)));

// Through a reference, so that no 32-byte vector is a return value (GCC warns of its ABI).
template <typename V>
inline void load(V& v, const float* p) {
  __builtin_memcpy(&v, p, sizeof v);
}

// Width lanes (1, 8 or 16) of one output pixel, accumulated in registers. K > 0: a whole
// K x K window inside the input, without dilation, whose taps the compiler unrolls.
template <PoolLoopKind Kind, int Width, int K>
inline void pool_chunk(const float* plane, float* o, const PoolLoopShape& s, int64_t h0, int64_t w0,
                       TapRange rows, TapRange cols) {
  using V = std::conditional_t<Width == 1, float, Float8>;
  constexpr int kVectors = Width == 1 ? 1 : Width / 8, kStep = Width == 1 ? 1 : 8;
  const float start = Kind == PoolLoopKind::kMax ? std::numeric_limits<float>::lowest() : 0.0f;
  V acc[kVectors];
  for (V& a : acc) a = V{} + start;
  auto tap = [&](const float* p) {
    for (int v = 0; v < kVectors; ++v) {
      V x;
      load(x, p + v * kStep);
      if constexpr (Kind == PoolLoopKind::kMax) {
        // oneDNN's comparison (take the input where the maximum is less), so the two agree bit
        // for bit, NaNs included.
        acc[v] = acc[v] < x ? x : acc[v];
      } else {
        acc[v] += x;
      }
    }
  };
  if constexpr (K > 0) {
    const float* corner = plane + (h0 * s.in_w + w0) * s.lanes;
    for (int kh = 0; kh < K; ++kh) {
      for (int kw = 0; kw < K; ++kw) tap(corner + (kh * s.in_w + kw) * s.lanes);
    }
  } else {
    for (int64_t kh = rows.first; kh < rows.last; ++kh) {
      const float* line = plane + (h0 + kh * s.dilation_h) * s.in_w * s.lanes;
      for (int64_t kw = cols.first; kw < cols.last; ++kw)
        tap(line + (w0 + kw * s.dilation_w) * s.lanes);
    }
  }
  if constexpr (Kind != PoolLoopKind::kMax) {
    int64_t count = (rows.last - rows.first) * (cols.last - cols.first);
    if constexpr (Kind == PoolLoopKind::kAverageIncludePad) {
      count = (std::min(h0 + s.kernel_h, s.in_h + s.pad_bottom) - h0) *
              (std::min(w0 + s.kernel_w, s.in_w + s.pad_right) - w0);
    }
    // A window with no input element averages to 0, as oneDNN's does.
    const float divisor = static_cast<float>(std::max<int64_t>(count, 1));
    for (V& a : acc) a /= divisor;
  }
  __builtin_memcpy(o, acc, sizeof acc);
}

// One output pixel: Lanes is 8 or 16, or 0 for channels last (chunks of 8, then a rest).
template <PoolLoopKind Kind, int Lanes, int K>
inline void pool_pixel_as(const float* plane, float* o, const PoolLoopShape& s, int64_t h0,
                          int64_t w0, TapRange rows, TapRange cols) {
  if constexpr (Lanes > 0) {
    pool_chunk<Kind, Lanes, K>(plane, o, s, h0, w0, rows, cols);
  } else {
    int64_t l = 0;
    for (; l + 8 <= s.lanes; l += 8)
      pool_chunk<Kind, 8, K>(plane + l, o + l, s, h0, w0, rows, cols);
    for (; l < s.lanes; ++l) pool_chunk<Kind, 1, K>(plane + l, o + l, s, h0, w0, rows, cols);
  }
}

// K > 0: the window is K x K without dilation; whole windows take the unrolled taps.
template <PoolLoopKind Kind, int Lanes, int K>
inline void pool_pixel(const float* plane, float* o, const PoolLoopShape& s, int64_t h0, int64_t w0,
                       TapRange rows) {
  const TapRange cols = taps_inside(w0, s.kernel_w, s.dilation_w, s.in_w);
  if (K > 0 && rows.first == 0 && rows.last == K && cols.first == 0 && cols.last == K) {
    pool_pixel_as<Kind, Lanes, K>(plane, o, s, h0, w0, rows, cols);
  } else {
    pool_pixel_as<Kind, Lanes, 0>(plane, o, s, h0, w0, rows, cols);
  }
}

// Plain (NCHW) data, stride 1: eight neighbouring output pixels of one channel whose K x K
// windows lie inside the input, as one vector per tap (the taps of eight neighbours are eight
// neighbouring inputs).
template <PoolLoopKind Kind, int K>
inline void pool_eight_plain(const float* plane, float* o, const PoolLoopShape& s, int64_t h0,
                             int64_t w0) {
  const float start = Kind == PoolLoopKind::kMax ? std::numeric_limits<float>::lowest() : 0.0f;
  Float8 acc = Float8{} + start;
  const float* corner = plane + h0 * s.in_w + w0;
  for (int kh = 0; kh < K; ++kh) {
    for (int kw = 0; kw < K; ++kw) {
      Float8 x;
      load(x, corner + kh * s.in_w + kw);
      if constexpr (Kind == PoolLoopKind::kMax) {
        acc = acc < x ? x : acc;
      } else {
        acc += x;
      }
    }
  }
  // A whole window inside the input counts K * K elements with or without the pads.
  if constexpr (Kind != PoolLoopKind::kMax) acc /= static_cast<float>(K * K);
  __builtin_memcpy(o, &acc, sizeof acc);
}

// Output rows [begin, end) of all batch * groups * out_h rows.
template <PoolLoopKind Kind, int Lanes, int K>
inline void pool_rows(const float* in, float* out, const PoolLoopShape& shape, int64_t begin,
                      int64_t end) {
  // A copy the output stores cannot alias (they go through memcpy, which may alias anything),
  // so the shape stays in registers.
  const PoolLoopShape s = shape;
  const int64_t in_plane = s.in_h * s.in_w * s.lanes, out_row = s.out_w * s.lanes;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t plane = row / s.out_h, oh = row % s.out_h;
    const float* source = in + plane * in_plane;
    float* o = out + row * out_row;
    const int64_t h0 = oh * s.stride_h - s.pad_top;
    const TapRange rows = taps_inside(h0, s.kernel_h, s.dilation_h, s.in_h);
    // Plain data with whole rows of taps at stride 1 takes eight pixels at a time inside.
    const bool eights =
        Lanes == 0 && K > 0 && s.lanes == 1 && s.stride_w == 1 && rows.first == 0 && rows.last == K;
    for (int64_t ow = 0; ow < s.out_w;) {
      const int64_t w0 = ow * s.stride_w - s.pad_left;
      if constexpr (Lanes == 0 && K > 0) {
        if (eights && ow + 8 <= s.out_w && w0 >= 0 && w0 + 7 + K <= s.in_w) {
          pool_eight_plain<Kind, K>(source, o + ow, s, h0, w0);
          ow += 8;
          continue;
        }
      }
      pool_pixel<Kind, Lanes, K>(source, o + ow * s.lanes, s, h0, w0, rows);
      ++ow;
    }
  }
}

template <PoolLoopKind Kind, int K>
inline void pool_by_lanes(const float* in, float* out, const PoolLoopShape& s, int64_t begin,
                          int64_t end) {
  if (s.lanes == 8) return pool_rows<Kind, 8, K>(in, out, s, begin, end);
  if (s.lanes == 16) return pool_rows<Kind, 16, K>(in, out, s, begin, end);
  pool_rows<Kind, 0, K>(in, out, s, begin, end);
}

// Square 2x2 and 3x3 windows without dilation (nearly every pool in the corpus) unrolled.
template <PoolLoopKind Kind>
inline void pool_by_window(const float* in, float* out, const PoolLoopShape& s, int64_t begin,
                           int64_t end) {
  const bool dense = s.dilation_h == 1 && s.dilation_w == 1 && s.kernel_h == s.kernel_w;
  if (dense && s.kernel_h == 3) return pool_by_lanes<Kind, 3>(in, out, s, begin, end);
  if (dense && s.kernel_h == 2) return pool_by_lanes<Kind, 2>(in, out, s, begin, end);
  pool_by_lanes<Kind, 0>(in, out, s, begin, end);
}

inline void pool_any(PoolLoopKind kind, const float* in, float* out, const PoolLoopShape& s,
                     int64_t begin, int64_t end) {
  switch (kind) {
    case PoolLoopKind::kMax:
      return pool_by_window<PoolLoopKind::kMax>(in, out, s, begin, end);
    case PoolLoopKind::kAverageExcludePad:
      return pool_by_window<PoolLoopKind::kAverageExcludePad>(in, out, s, begin, end);
    case PoolLoopKind::kAverageIncludePad:
      return pool_by_window<PoolLoopKind::kAverageIncludePad>(in, out, s, begin, end);
  }
}

#pragma GCC pop_options

}  // namespace

bool pool_loops_available() {
  return vector_isa() == VectorIsa::kAvx2;
}

void pool_loops(PoolLoopKind kind, const float* in, float* out, const PoolLoopShape& shape,
                int threads) {
  const int64_t rows = shape.batch * shape.groups * shape.out_h;
  // Threads only where each gets enough work to pay for waking it.
  const int64_t work = rows * shape.out_w * shape.lanes * shape.kernel_h * shape.kernel_w;
  const int team = work >= (int64_t{1} << 15) ? loop_team(rows, threads) : 1;
  if (team <= 1) {
    pool_any(kind, in, out, shape, 0, rows);
    return;
  }
#pragma omp parallel num_threads(team)
  {
    const int64_t members = omp_get_num_threads(), member = omp_get_thread_num();
    pool_any(kind, in, out, shape, rows * member / members, rows * (member + 1) / members);
  }
}

}  // namespace cleave
