// Winograd F(2x2, 3x3) of cleave's own on 8-channel blocks with AVX2 and FMA (winograd.h).
#include "runtime/kernels/nn/winograd.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "runtime/claim_pool.h"
#include "runtime/cpu_isa.h"

namespace cleave::conv_detail {

namespace {

constexpr int64_t kBlock = 8;    // Channels per vector and per layout block.
constexpr int64_t kPanel = 16;   // Output channels per product panel (two vectors).
constexpr int64_t kRows = 6;     // Tiles per product micro-kernel: 12 accumulators.
constexpr int64_t kPoints = 16;  // Winograd points per tile.
// A chunk's transformed input and products, 16 x tiles x (in + out channels) floats, sized to
// stay in a 512 KiB L2 cache with room for the weights' panel.
constexpr int64_t kChunkFloats = 6144;
// Transformed weights above this no longer stay in L2 between chunks, so chunks are made long
// enough that re-reading them costs little beside the products (up to this many tiles).
constexpr std::size_t kCachedWeightBytes = std::size_t{1} << 20;
constexpr int64_t kLongChunk = 96;

int64_t round_up(int64_t value, int64_t step) {
  return (value + step - 1) / step * step;
}

// Scratch for one chunk, per thread, kept between runs.
float* scratch(std::size_t which, std::size_t floats) {
  thread_local std::vector<float> buffers[2];
  if (buffers[which].size() < floats) buffers[which].resize(floats);
  return buffers[which].data();
}

// C[r][0..16) = sum_k A[r][k] * B[k][0..16) for R rows of A (stride lda), B packed 16 wide.
template <int R>
__attribute__((target("avx2,fma"))) void product_rows(const float* a, int64_t lda, const float* b,
                                                      int64_t depth, float* c, int64_t ldc) {
  __m256 low[R], high[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) low[r] = high[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * kPanel);
    const __m256 b1 = _mm256_loadu_ps(b + k * kPanel + kBlock);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 value = _mm256_broadcast_ss(a + r * lda + k);
      low[r] = _mm256_fmadd_ps(value, b0, low[r]);
      high[r] = _mm256_fmadd_ps(value, b1, high[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * ldc, low[r]);
    _mm256_storeu_ps(c + r * ldc + kBlock, high[r]);
  }
}

void product_panel(const float* a, int64_t rows, int64_t lda, const float* b, int64_t depth,
                   float* c, int64_t ldc) {
  int64_t row = 0;
  for (; row + kRows <= rows; row += kRows) {
    product_rows<6>(a + row * lda, lda, b, depth, c + row * ldc, ldc);
  }
  const float* a_rest = a + row * lda;
  float* c_rest = c + row * ldc;
  switch (rows - row) {
    case 1:
      product_rows<1>(a_rest, lda, b, depth, c_rest, ldc);
      break;
    case 2:
      product_rows<2>(a_rest, lda, b, depth, c_rest, ldc);
      break;
    case 3:
      product_rows<3>(a_rest, lda, b, depth, c_rest, ldc);
      break;
    case 4:
      product_rows<4>(a_rest, lda, b, depth, c_rest, ldc);
      break;
    case 5:
      product_rows<5>(a_rest, lda, b, depth, c_rest, ldc);
      break;
    default:
      break;
  }
}

// B^T d B of one 4x4 tile of 8 channels, zeros outside the input; point i*4+j goes to
// out[(i*4+j) * stride].
__attribute__((target("avx2,fma"))) void transform_input_tile(const float* plane, int64_t height,
                                                              int64_t width, int64_t top,
                                                              int64_t left, float* out,
                                                              int64_t stride) {
  __m256 d[4][4];
  for (int r = 0; r < 4; ++r) {
    const int64_t y = top + r;
    for (int c = 0; c < 4; ++c) {
      const int64_t x = left + c;
      d[r][c] = (y >= 0 && y < height && x >= 0 && x < width)
                    ? _mm256_loadu_ps(plane + (y * width + x) * kBlock)
                    : _mm256_setzero_ps();
    }
  }
  __m256 t[4][4];
  for (int c = 0; c < 4; ++c) {
    t[0][c] = _mm256_sub_ps(d[0][c], d[2][c]);
    t[1][c] = _mm256_add_ps(d[1][c], d[2][c]);
    t[2][c] = _mm256_sub_ps(d[2][c], d[1][c]);
    t[3][c] = _mm256_sub_ps(d[1][c], d[3][c]);
  }
  for (int r = 0; r < 4; ++r) {
    _mm256_storeu_ps(out + (r * 4 + 0) * stride, _mm256_sub_ps(t[r][0], t[r][2]));
    _mm256_storeu_ps(out + (r * 4 + 1) * stride, _mm256_add_ps(t[r][1], t[r][2]));
    _mm256_storeu_ps(out + (r * 4 + 2) * stride, _mm256_sub_ps(t[r][2], t[r][1]));
    _mm256_storeu_ps(out + (r * 4 + 3) * stride, _mm256_sub_ps(t[r][1], t[r][3]));
  }
}

// A^T m A of one tile's 16 products for 8 channels, plus bias, the old destination when
// accumulating, the clamp, and zeros in the block's padding lanes; written where the 2x2
// outputs fall inside the destination plane.
__attribute__((target("avx2,fma"))) void transform_output_tile(
    const float* in, int64_t stride, const float* bias8, int64_t valid_lanes,
    const WinogradEpilogue& epilogue, float* plane, int64_t out_height, int64_t out_width,
    int64_t top, int64_t left) {
  __m256 s[2][4];
  for (int c = 0; c < 4; ++c) {
    const __m256 m0 = _mm256_loadu_ps(in + (0 * 4 + c) * stride);
    const __m256 m1 = _mm256_loadu_ps(in + (1 * 4 + c) * stride);
    const __m256 m2 = _mm256_loadu_ps(in + (2 * 4 + c) * stride);
    const __m256 m3 = _mm256_loadu_ps(in + (3 * 4 + c) * stride);
    s[0][c] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
    s[1][c] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
  }
  const __m256 bias = _mm256_loadu_ps(bias8);
  const __m256 low = _mm256_set1_ps(epilogue.low), high = _mm256_set1_ps(epilogue.high);
  for (int r = 0; r < 2; ++r) {
    const int64_t y = top + r;
    if (y >= out_height) break;
    const __m256 row[2] = {_mm256_add_ps(_mm256_add_ps(s[r][0], s[r][1]), s[r][2]),
                           _mm256_sub_ps(_mm256_sub_ps(s[r][1], s[r][2]), s[r][3])};
    for (int c = 0; c < 2; ++c) {
      const int64_t x = left + c;
      if (x >= out_width) break;
      float* at = plane + (y * out_width + x) * kBlock;
      __m256 value = _mm256_add_ps(row[c], bias);
      if (epilogue.accumulate) value = _mm256_add_ps(value, _mm256_loadu_ps(at));
      value = _mm256_min_ps(_mm256_max_ps(value, low), high);
      if (valid_lanes < kBlock) {
        alignas(32) float lanes[kBlock];
        _mm256_store_ps(lanes, value);
        for (int64_t lane = valid_lanes; lane < kBlock; ++lane) lanes[lane] = 0.0f;
        value = _mm256_load_ps(lanes);
      }
      _mm256_storeu_ps(at, value);
    }
  }
}

}  // namespace

bool own_winograd_available() {
  return vector_isa() == VectorIsa::kAvx2 && native_channel_block() == kBlock;
}

OwnWinograd::OwnWinograd(const WinogradProblem& problem, const float* weights,
                         WinogradEpilogue epilogue)
    : p_(problem), epilogue_(epilogue) {
  if (p_.batch < 1 || p_.channels_in < 1 || p_.channels_out < 1 || p_.out_height < 1 ||
      p_.out_width < 1) {
    throw std::invalid_argument("OwnWinograd: empty problem");
  }
  in_padded_ = round_up(p_.channels_in, kBlock);
  out_padded_ = round_up(p_.channels_out, kPanel);
  tiles_high_ = (p_.out_height + 1) / 2;
  tiles_wide_ = (p_.out_width + 1) / 2;
  tiles_ = tiles_high_ * tiles_wide_;
  weights_.assign(static_cast<std::size_t>(kPoints * out_padded_ * in_padded_), 0.0f);
  const int64_t panels = out_padded_ / kPanel;
  // U = G g G^T with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
  for (int64_t o = 0; o < p_.channels_out; ++o) {
    for (int64_t i = 0; i < p_.channels_in; ++i) {
      const float* g = weights + (o * p_.channels_in + i) * 9;
      float rows[4][3];
      for (int c = 0; c < 3; ++c) {
        const float a = g[c], b = g[3 + c], d = g[6 + c];
        rows[0][c] = a;
        rows[1][c] = 0.5f * (a + b + d);
        rows[2][c] = 0.5f * (a - b + d);
        rows[3][c] = d;
      }
      for (int r = 0; r < 4; ++r) {
        const float a = rows[r][0], b = rows[r][1], d = rows[r][2];
        const float u[4] = {a, 0.5f * (a + b + d), 0.5f * (a - b + d), d};
        for (int c = 0; c < 4; ++c) {
          const int64_t point = r * 4 + c;
          weights_[static_cast<std::size_t>(
              ((point * panels + o / kPanel) * in_padded_ + i) * kPanel + o % kPanel)] = u[c];
        }
      }
    }
  }
  chunk_ =
      std::min(tiles_, std::max(kRows, kChunkFloats / (in_padded_ + out_padded_) / kRows * kRows));
  if (weight_bytes() > kCachedWeightBytes) chunk_ = std::min(tiles_, kLongChunk);
  chunks_ = (tiles_ + chunk_ - 1) / chunk_;
}

dnnl::memory::desc OwnWinograd::source() const {
  return dnnl::memory::desc({p_.batch, p_.channels_in, p_.height, p_.width},
                            dnnl::memory::data_type::f32, dnnl::memory::format_tag::nChw8c);
}

dnnl::memory::desc OwnWinograd::destination() const {
  return dnnl::memory::desc({p_.batch, p_.channels_out, p_.out_height, p_.out_width},
                            dnnl::memory::data_type::f32, dnnl::memory::format_tag::nChw8c);
}

void OwnWinograd::run(const float* source, const float* bias, float* destination, int threads,
                      ClaimPool* pool) const {
  const int64_t units = p_.batch * chunks_;
  auto unit = [&](int64_t index, int inner_threads) {
    run_chunk(source, bias, destination, index / chunks_, index % chunks_, inner_threads);
  };
  if (pool) {
    pool->run(static_cast<int>(units), [&](int index) { unit(index, 1); });
  } else if (threads > 1 && units >= 2 * threads) {
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int64_t index = 0; index < units; ++index) unit(index, 1);
  } else {
    // Too few chunks to share: the threads share each chunk's transforms and products.
    for (int64_t index = 0; index < units; ++index) unit(index, threads);
  }
}

void OwnWinograd::run_chunk(const float* source, const float* bias, float* destination,
                            int64_t image, int64_t chunk, int threads) const {
  const int64_t first = chunk * chunk_, count = std::min(chunk_, tiles_ - first);
  float* transformed = scratch(0, static_cast<std::size_t>(kPoints * count * in_padded_));
  float* products = scratch(1, static_cast<std::size_t>(kPoints * count * out_padded_));
  const float* input = source + image * in_padded_ * p_.height * p_.width;
  const int64_t out_blocks = round_up(p_.channels_out, kBlock) / kBlock;
  float* output = destination + image * out_blocks * kBlock * p_.out_height * p_.out_width;
  const bool share = threads > 1;

  const int64_t in_blocks = in_padded_ / kBlock;
#pragma omp parallel for collapse(2) num_threads(threads) if (share)
  for (int64_t block = 0; block < in_blocks; ++block) {
    for (int64_t tile = 0; tile < count; ++tile) {
      const int64_t at = first + tile;
      transform_input_tile(input + block * p_.height * p_.width * kBlock, p_.height, p_.width,
                           2 * (at / tiles_wide_) - p_.pad_top,
                           2 * (at % tiles_wide_) - p_.pad_left,
                           transformed + tile * in_padded_ + block * kBlock, count * in_padded_);
    }
  }

  const int64_t panels = out_padded_ / kPanel;
#pragma omp parallel for collapse(2) num_threads(threads) if (share)
  for (int64_t point = 0; point < kPoints; ++point) {
    for (int64_t panel = 0; panel < panels; ++panel) {
      product_panel(transformed + point * count * in_padded_, count, in_padded_,
                    weights_.data() + (point * panels + panel) * in_padded_ * kPanel, in_padded_,
                    products + point * count * out_padded_ + panel * kPanel, out_padded_);
    }
  }

#pragma omp parallel for collapse(2) num_threads(threads) if (share)
  for (int64_t block = 0; block < out_blocks; ++block) {
    for (int64_t tile = 0; tile < count; ++tile) {
      alignas(32) float bias8[kBlock] = {};
      const int64_t valid = std::min(kBlock, p_.channels_out - block * kBlock);
      if (bias) std::memcpy(bias8, bias + block * kBlock, static_cast<std::size_t>(valid) * 4);
      const int64_t at = first + tile;
      transform_output_tile(products + tile * out_padded_ + block * kBlock, count * out_padded_,
                            bias8, valid, epilogue_,
                            output + block * p_.out_height * p_.out_width * kBlock, p_.out_height,
                            p_.out_width, 2 * (at / tiles_wide_), 2 * (at % tiles_wide_));
    }
  }
}

}  // namespace cleave::conv_detail
