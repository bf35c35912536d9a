// Resize's separable interpolation passes: one portable body per pass, compiled for several
// instruction sets, and gathering loops for the innermost axis of a plain float tensor.
#include "runtime/kernels/tensor/resize_passes.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "runtime/intra_op_team.h"
#include "runtime/kernels/tensor/common.h"

// Every loop here must give the bits of the scalar baseline loop (the reference the tests
// compare with), so no multiply and add may be fused into one rounding.
#pragma GCC optimize("fp-contract=off")

namespace cleave::shape {

namespace {

// A pass over a dim that is not innermost: output row r (of outer × out rows of `inner`
// elements) is a weighted sum of a few input rows of its block.
template <typename T>
struct RowPass {
  const AxisTaps* taps;
  int64_t in, out, inner;
  const T* source;
  T* target;
  bool like_innermost;
};

// A pass over the innermost dim: every output is a dot product of a few inputs of its line.
template <typename T>
struct InnermostPass {
  const AxisTaps* taps;
  int64_t in, out;
  const T* source;
  T* target;
};

template <typename T>
__attribute__((always_inline)) inline void rows_body(const RowPass<T>& p, int64_t begin,
                                                     int64_t end) {
  const int count = p.taps->taps;
  for (int64_t row = begin; row < end; ++row) {
    int64_t o = row / p.out, y = row % p.out;
    const T* block = p.source + o * p.in * p.inner;
    T* line = p.target + row * p.inner;
    const int64_t* index = &p.taps->index[y * count];
    const float* weight = &p.taps->weight[y * count];
    const T* first = block + index[0] * p.inner;
    auto w0 = static_cast<T>(weight[0]);
    if (count == 2) {
      // Linear: each output written once (the sums below round as the general loop's do).
      const T* second = block + index[1] * p.inner;
      auto w1 = static_cast<T>(weight[1]);
      if (p.like_innermost) {
        for (int64_t i = 0; i < p.inner; ++i) line[i] = (T(0) + w0 * first[i]) + w1 * second[i];
      } else if (weight[1] == 0) {
        for (int64_t i = 0; i < p.inner; ++i) line[i] = w0 * first[i];
      } else {
        for (int64_t i = 0; i < p.inner; ++i) line[i] = w0 * first[i] + w1 * second[i];
      }
      continue;
    }
    if (p.like_innermost) {
      for (int64_t i = 0; i < p.inner; ++i) line[i] = T(0) + w0 * first[i];
    } else {
      for (int64_t i = 0; i < p.inner; ++i) line[i] = w0 * first[i];
    }
    for (int t = 1; t < count; ++t) {
      // The innermost-axis sum adds every tap (a zero weight times an infinity is NaN there).
      if (!p.like_innermost && weight[t] == 0) continue;
      const T* next = block + index[t] * p.inner;
      auto w = static_cast<T>(weight[t]);
      for (int64_t i = 0; i < p.inner; ++i) line[i] += w * next[i];
    }
  }
}

template <typename T, int kTaps>
__attribute__((always_inline)) inline void innermost_body(const InnermostPass<T>& p, int64_t begin,
                                                          int64_t end) {
  for (int64_t o = begin; o < end; ++o) {
    const T* line_in = p.source + o * p.in;
    T* line_out = p.target + o * p.out;
    const int64_t* index = p.taps->index.data();
    const float* weight = p.taps->weight.data();
    for (int64_t y = 0; y < p.out; ++y, index += kTaps, weight += kTaps) {
      T sum = 0;
      for (int t = 0; t < kTaps; ++t) sum += static_cast<T>(weight[t]) * line_in[index[t]];
      line_out[y] = sum;
    }
  }
}

// The scalar sum of output y of a line, from the columns (the gathering loops' tails).
template <int kTaps>
inline float innermost_one(const InnermostPass<float>& p, const float* line_in, int64_t y) {
  float sum = 0;
  for (int t = 0; t < kTaps; ++t) {
    sum += p.taps->weight_columns[t * p.out + y] * line_in[p.taps->index_columns[t * p.out + y]];
  }
  return sum;
}

template <typename T>
__attribute__((target("avx512f,avx512vl,avx512dq,avx2"))) void rows_avx512(const RowPass<T>& p,
                                                                           int64_t begin,
                                                                           int64_t end) {
  rows_body(p, begin, end);
}

template <typename T>
__attribute__((target("avx2"))) void rows_avx2(const RowPass<T>& p, int64_t begin, int64_t end) {
  rows_body(p, begin, end);
}

template <typename T>
void rows_baseline(const RowPass<T>& p, int64_t begin, int64_t end) {
  rows_body(p, begin, end);
}

template <int kTaps>
__attribute__((target("avx512f,avx512vl,avx512dq,avx2"))) void gather_avx512(
    const InnermostPass<float>& p, int64_t begin, int64_t end) {
  const int32_t* index = p.taps->index_columns.data();
  const float* weight = p.taps->weight_columns.data();
  for (int64_t o = begin; o < end; ++o) {
    const float* line_in = p.source + o * p.in;
    float* line_out = p.target + o * p.out;
    int64_t y = 0;
    for (; y + 16 <= p.out; y += 16) {
      __m512 sum = _mm512_setzero_ps();
      for (int t = 0; t < kTaps; ++t) {
        __m512i at = _mm512_loadu_si512(index + t * p.out + y);
        __m512 w = _mm512_loadu_ps(weight + t * p.out + y);
        // The masked form: GCC 12 warns that the plain one reads an undefined vector.
        __m512 x = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xffff, at, line_in, 4);
        sum = _mm512_add_ps(sum, _mm512_mul_ps(w, x));
      }
      _mm512_storeu_ps(line_out + y, sum);
    }
    for (; y < p.out; ++y) line_out[y] = innermost_one<kTaps>(p, line_in, y);
  }
}

template <int kTaps>
__attribute__((target("avx2"))) void gather_avx2(const InnermostPass<float>& p, int64_t begin,
                                                 int64_t end) {
  const int32_t* index = p.taps->index_columns.data();
  const float* weight = p.taps->weight_columns.data();
  for (int64_t o = begin; o < end; ++o) {
    const float* line_in = p.source + o * p.in;
    float* line_out = p.target + o * p.out;
    int64_t y = 0;
    for (; y + 8 <= p.out; y += 8) {
      __m256 sum = _mm256_setzero_ps();
      for (int t = 0; t < kTaps; ++t) {
        __m256i at = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index + t * p.out + y));
        __m256 w = _mm256_loadu_ps(weight + t * p.out + y);
        sum = _mm256_add_ps(sum, _mm256_mul_ps(w, _mm256_i32gather_ps(line_in, at, 4)));
      }
      _mm256_storeu_ps(line_out + y, sum);
    }
    for (; y < p.out; ++y) line_out[y] = innermost_one<kTaps>(p, line_in, y);
  }
}

template <typename T, int kTaps>
void innermost_baseline(const InnermostPass<T>& p, int64_t begin, int64_t end) {
  innermost_body<T, kTaps>(p, begin, end);
}

template <typename T>
using RowLoop = void (*)(const RowPass<T>&, int64_t, int64_t);
template <typename T>
using InnermostLoop = void (*)(const InnermostPass<T>&, int64_t, int64_t);

template <typename T>
RowLoop<T> row_loop(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kAvx512:
      return rows_avx512<T>;
    case VectorIsa::kAvx2:
      return rows_avx2<T>;
    case VectorIsa::kBaseline:
      break;
  }
  return rows_baseline<T>;
}

template <typename T, int kTaps>
InnermostLoop<T> innermost_loop(const AxisTaps& taps, VectorIsa isa) {
  if constexpr (std::is_same_v<T, float>) {
    if (!taps.index_columns.empty() && isa == VectorIsa::kAvx512) return gather_avx512<kTaps>;
    if (!taps.index_columns.empty() && isa == VectorIsa::kAvx2) return gather_avx2<kTaps>;
  }
  return innermost_baseline<T, kTaps>;
}

// Runs `loop` over [0, total) in `parts` contiguous ranges, one per thread.
template <typename Pass, typename Loop>
void split(const Pass& pass, Loop loop, int64_t total, int parts, int threads) {
#pragma omp parallel for num_threads(loop_team(parts, threads)) schedule(static, 1) if (parts > 1)
  for (int part = 0; part < parts; ++part) {
    loop(pass, total * part / parts, total * (part + 1) / parts);
  }
}

// One separable pass: resizes dim `d` of `shape` from `source` into `target`.
template <typename T>
void interpolate_dim(const ResizeDim& dim, std::span<const int64_t> shape, std::size_t d,
                     const T* source, T* target, int threads, VectorIsa isa) {
  int64_t outer = product(shape.first(d)), in = shape[d];
  int64_t inner = product(shape.subspan(d + 1));
  const AxisTaps& taps = *dim.taps;
  bool parallel = threads > 1 && outer * dim.out * inner >= (1 << 14);
  if (inner == 1) {
    InnermostPass<T> pass{&taps, in, dim.out, source, target};
    int parts = parallel ? static_cast<int>(std::min<int64_t>(threads, outer)) : 1;
    if (taps.taps == 2) {
      split(pass, innermost_loop<T, 2>(taps, isa), outer, parts, threads);
    } else {
      split(pass, innermost_loop<T, 4>(taps, isa), outer, parts, threads);
    }
    return;
  }
  RowPass<T> pass{&taps, in, dim.out, inner, source, target, dim.like_innermost};
  int64_t rows = outer * dim.out;
  int parts = parallel ? static_cast<int>(std::min<int64_t>(threads, rows)) : 1;
  split(pass, row_loop<T>(isa), rows, parts, threads);
}

}  // namespace

void add_tap_columns(AxisTaps& taps) {
  const int64_t out = taps.taps > 0 ? static_cast<int64_t>(taps.index.size()) / taps.taps : 0;
  taps.index_columns.clear();
  taps.weight_columns.assign(taps.weight.size(), 0.0f);
  bool fits = std::all_of(taps.index.begin(), taps.index.end(),
                          [](int64_t i) { return i <= std::numeric_limits<int32_t>::max(); });
  if (fits) taps.index_columns.resize(taps.index.size());
  for (int64_t o = 0; o < out; ++o) {
    for (int t = 0; t < taps.taps; ++t) {
      taps.weight_columns[t * out + o] = taps.weight[o * taps.taps + t];
      if (fits)
        taps.index_columns[t * out + o] = static_cast<int32_t>(taps.index[o * taps.taps + t]);
    }
  }
}

template <typename T>
void interpolate_dims(std::span<const ResizeDim> dims, std::span<const std::size_t> order,
                      const T* source, T* target, int threads, VectorIsa isa) {
  std::vector<std::size_t> passes;
  for (std::size_t d : order) {
    if (dims[d].taps && !dims[d].taps->identity) passes.push_back(d);
  }
  std::vector<int64_t> shape, out_shape;
  for (const ResizeDim& dim : dims) {
    shape.push_back(dim.in);
    out_shape.push_back(dim.out);
  }
  if (passes.empty()) {
    std::memcpy(target, source, static_cast<std::size_t>(product(out_shape)) * sizeof(T));
    return;
  }
  // Kept from call to call: a fresh intermediate costs its page faults and zeroing each run.
  thread_local std::vector<T> buffers[2];
  const T* current = source;
  for (std::size_t p = 0; p < passes.size(); ++p) {
    std::size_t d = passes[p];
    std::vector<int64_t> next_shape = shape;
    next_shape[d] = dims[d].out;
    T* next = target;
    if (p + 1 < passes.size()) {
      buffers[p % 2].resize(product(next_shape));
      next = buffers[p % 2].data();
    }
    interpolate_dim(dims[d], shape, d, current, next, threads, isa);
    current = next;
    shape = next_shape;
  }
}

template void interpolate_dims<float>(std::span<const ResizeDim>, std::span<const std::size_t>,
                                      const float*, float*, int, VectorIsa);
template void interpolate_dims<double>(std::span<const ResizeDim>, std::span<const std::size_t>,
                                       const double*, double*, int, VectorIsa);

}  // namespace cleave::shape
