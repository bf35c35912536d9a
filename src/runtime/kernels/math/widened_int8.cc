// Exact int8 products widened to int16 (vpmaddwd into int32): the AVX2 tiles and their driver.
#include "runtime/kernels/math/widened_int8.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/staging.h"

namespace cleave::quantize_detail {

namespace {

constexpr int64_t kBlock = 8;             // Columns per block: one ymm of int32 sums.
constexpr int64_t kPairBytes = 16;        // One pair of depth values of a block's 8 columns.
constexpr int kRowsPerTile = 4;           // Rows sharing each widened weight load.
constexpr int64_t kSerialWork = 1 << 20;  // Products below which threads cost more than they give.
// Widened rows a block pair's tiles sweep before the next pair's: they stay in L2 between pairs.
constexpr int64_t kChunkBytes = 256 << 10;

int64_t pairs_of(int64_t depth) {
  return (depth + 1) / 2;
}

// Rows × Blocks column blocks: out[(r·Blocks + b)·8 + c] = Σ_p pair p of row r · block b's
// pair p of column c. `a` holds each row's widened values (a_stride apart), the weights' blocks
// are block_bytes apart. (Weights widened to int16 once at packing instead of here timed the
// same, 0.98-1.03 on the held-out models' shapes: vpmaddwd and vpaddd bound the loop, not the
// widening; docs/results/heldout-speed.md, 2026-12-01 hi8mm.)
template <int Rows, int Blocks>
__attribute__((target("avx2"))) void tile(const int8_t* w, int64_t block_bytes, int64_t pairs,
                                          const int16_t* a, int64_t a_stride, int32_t* out) {
  __m256i sums[Rows][Blocks];
  for (int r = 0; r < Rows; ++r) {
    for (int b = 0; b < Blocks; ++b) sums[r][b] = _mm256_setzero_si256();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m256i weights[Blocks];
    for (int b = 0; b < Blocks; ++b) {
      weights[b] = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + b * block_bytes + p * kPairBytes)));
    }
    for (int r = 0; r < Rows; ++r) {
      int32_t pair = 0;
      std::memcpy(&pair, a + r * a_stride + 2 * p, sizeof pair);
      const __m256i values = _mm256_set1_epi32(pair);
      for (int b = 0; b < Blocks; ++b) {
        sums[r][b] = _mm256_add_epi32(sums[r][b], _mm256_madd_epi16(values, weights[b]));
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int b = 0; b < Blocks; ++b) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (r * Blocks + b) * kBlock), sums[r][b]);
    }
  }
}

using Tile = void (*)(const int8_t*, int64_t, int64_t, const int16_t*, int64_t, int32_t*);

template <int Rows>
Tile tile_of(int64_t blocks) {
  return blocks == 2 ? tile<Rows, 2> : tile<Rows, 1>;
}

Tile tile_of(int64_t rows, int64_t blocks) {
  switch (rows) {
    case 1:
      return tile_of<1>(blocks);
    case 2:
      return tile_of<2>(blocks);
    case 3:
      return tile_of<3>(blocks);
    default:
      return tile_of<4>(blocks);
  }
}

// Rows [begin, end) of the data as int16 (a − a_zero, exact: |u8 − zero| ≤ 255), each padded
// to whole pairs with a 0 (the buffer is reused).
template <typename A>
void widen_rows(const A* a, int32_t a_zero, const WidenedRows& at, int64_t depth, int64_t stride,
                int64_t begin, int64_t end, int16_t* rows) {
  for (int64_t r = begin; r < end; ++r) {
    const A* row = a + (r / at.per_batch) * at.batch_stride + (r % at.per_batch) * at.row_stride;
    int16_t* out = rows + r * stride;
    for (int64_t k = 0; k < depth; ++k) out[k] = static_cast<int16_t>(row[k] - a_zero);
    std::fill(out + depth, out + stride, int16_t{0});
  }
}

// Column blocks [begin, end) of every row: bias + the tiles' sums, written where `at` says.
// The rows go in chunks of about kChunkBytes of widened values, each swept by every block pair.
void block_sums(const WidenedWeights& w, const int16_t* rows, int64_t stride, const WidenedRows& at,
                const int32_t* bias, int32_t* sums, int64_t begin, int64_t end) {
  const int64_t pairs = pairs_of(w.depth);
  const int64_t block_bytes = pairs * kPairBytes;
  const int64_t row_bytes = stride * static_cast<int64_t>(sizeof(int16_t));
  const int64_t chunk =
      std::max<int64_t>(kRowsPerTile, kChunkBytes / row_bytes / kRowsPerTile * kRowsPerTile);
  int32_t tile_sums[kRowsPerTile * 2 * kBlock];
  for (int64_t first_row = 0; first_row < at.rows; first_row += chunk) {
    const int64_t last_row = std::min(at.rows, first_row + chunk);
    for (int64_t block = begin; block < end; block += 2) {
      const int64_t width = std::min<int64_t>(2, end - block);
      for (int64_t row = first_row; row < last_row; row += kRowsPerTile) {
        const int64_t height = std::min<int64_t>(kRowsPerTile, last_row - row);
        tile_of(height, width)(w.packed.data() + block * block_bytes, block_bytes, pairs,
                               rows + row * stride, stride, tile_sums);
        for (int64_t r = 0; r < height; ++r) {
          const int64_t i = row + r;
          int32_t* out = sums + (i / at.per_batch) * at.out_batch_stride +
                         (i % at.per_batch) * at.out_row_stride;
          const int64_t first = block * kBlock;
          const int64_t last = std::min(w.columns, first + width * kBlock);
          const int32_t* own = tile_sums + r * width * kBlock;
          for (int64_t j = first; j < last; ++j) {
            out[j * at.out_column_stride] = own[j - first] + (bias ? bias[j] : 0);
          }
        }
      }
    }
  }
}

// Member `member` of `members`' share of `count` parts, in pieces of `grain` parts.
std::pair<int64_t, int64_t> share_of(int64_t count, int64_t grain, int64_t member,
                                     int64_t members) {
  const int64_t pieces = (count + grain - 1) / grain;
  const int64_t per = (pieces + members - 1) / members;
  const int64_t begin = std::min(count, member * per * grain);
  return {begin, std::min(count, begin + per * grain)};
}

// The products and then `after(member, members)` (a pass over the finished sums, each member
// its share), in one OpenMP region on up to `threads` threads: each member widens its share of
// the rows, then, past a barrier, sums its share of the column blocks (pairs of blocks, a
// tile's width), then, past another, runs `after`. The rows are widened into the calling
// thread's staging buffer (StagingSlot::kInput). Each sum is one tile's, whatever the team.
template <typename A, typename After>
void products(const WidenedWeights& w, const A* a, int32_t a_zero, const WidenedRows& at,
              const int32_t* bias, int32_t* sums, int threads, After&& after) {
  const int64_t stride = 2 * pairs_of(w.depth);
  const int64_t blocks = (w.columns + kBlock - 1) / kBlock;
  if (at.rows * w.depth * w.columns < kSerialWork) threads = 1;
  auto* rows = reinterpret_cast<int16_t*>(staging_buffer(
      StagingSlot::kInput, static_cast<std::size_t>(at.rows * stride) * sizeof(int16_t)));
  if (threads <= 1) {
    widen_rows(a, a_zero, at, w.depth, stride, 0, at.rows, rows);
    block_sums(w, rows, stride, at, bias, sums, 0, blocks);
    after(int64_t{0}, int64_t{1});
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    // The team may be smaller than asked (nested regions): the shares are the members'.
    const int64_t members = omp_get_num_threads(), member = omp_get_thread_num();
    const auto [first_row, last_row] = share_of(at.rows, 1, member, members);
    widen_rows(a, a_zero, at, w.depth, stride, first_row, last_row, rows);
#pragma omp barrier
    const auto [first_block, last_block] = share_of(blocks, 2, member, members);
    block_sums(w, rows, stride, at, bias, sums, first_block, last_block);
#pragma omp barrier
    after(member, members);
  }
}

class WidenedKernel final : public Kernel, public PackedConstants {
 public:
  WidenedKernel(WidenedWeights weights, OutputSpec output, const WidenedProduct& how, int threads)
      : weights_(std::move(weights)), spec_(std::move(output)), how_(how), threads_(threads) {
    if (how_.y_scale) sums_ = Tensor::allocate_uninitialised(DataType::kInt32, spec_.shape);
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return "cleave:avx2 " + how_.name; }
  // The weights run from the packed copy: the loaded ones may go.
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != how_.weights;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream&) override {
    Tensor* sums = how_.y_scale ? &sums_ : outputs[0];
    const Tensor& data = *inputs[how_.data];
    const int32_t* bias = how_.bias ? inputs[*how_.bias]->data<int32_t>() : nullptr;
    std::optional<Requantize> requantize;
    if (how_.y_scale) requantize = requantize_of(inputs, how_.channels, *how_.y_scale);
    const int32_t* from = sums->data<int32_t>();
    auto* out = static_cast<uint8_t*>(outputs[0]->raw());  // u8 or i8: one byte each.
    const int64_t count = sums->element_count();
    // The requantization in the products' region: each member its elements, in runs of 16
    // (parallel_for's: no cache line written by two).
    const auto requantized = [&](int64_t member, int64_t members) {
      if (!requantize) return;
      const auto [begin, end] = share_of(count, 16, member, members);
      if (begin < end) {
        write_requantized(*requantize, from + begin, end - begin, how_.channels,
                          how_.channel_stride, out + begin, begin);
      }
    };
    if (data.dtype() == DataType::kUInt8) {
      products(weights_, data.data<uint8_t>(), how_.data_zero, how_.rows, bias,
               sums->data<int32_t>(), threads_, requantized);
    } else {
      products(weights_, data.data<int8_t>(), how_.data_zero, how_.rows, bias,
               sums->data<int32_t>(), threads_, requantized);
    }
  }

 private:
  WidenedWeights weights_;
  OutputSpec spec_;
  WidenedProduct how_;
  Tensor sums_;
  int threads_ = 1;
};

}  // namespace

WidenedWeights pack_widened(const int8_t* w, int64_t depth, int64_t columns, int64_t depth_stride,
                            int64_t column_stride) {
  WidenedWeights packed;
  packed.depth = depth;
  packed.columns = columns;
  const int64_t pairs = pairs_of(depth);
  const int64_t blocks = (columns + kBlock - 1) / kBlock;
  packed.packed.assign(static_cast<std::size_t>(blocks * pairs * kPairBytes), 0);
  for (int64_t block = 0; block < blocks; ++block) {
    for (int64_t p = 0; p < pairs; ++p) {
      int8_t* out = packed.packed.data() + (block * pairs + p) * kPairBytes;
      for (int64_t c = 0; c < kBlock; ++c) {
        const int64_t j = block * kBlock + c;
        for (int64_t e = 0; e < 2; ++e) {
          const int64_t k = 2 * p + e;
          if (j < columns && k < depth) out[2 * c + e] = w[k * depth_stride + j * column_stride];
        }
      }
    }
  }
  return packed;
}

bool widened_products_available() {
  return vector_isa() != VectorIsa::kBaseline;
}

void widened_products(const WidenedWeights& w, const uint8_t* a, int32_t a_zero,
                      const WidenedRows& rows, const int32_t* bias, int32_t* sums, int threads) {
  products(w, a, a_zero, rows, bias, sums, threads, [](int64_t, int64_t) {});
}

void widened_products(const WidenedWeights& w, const int8_t* a, int32_t a_zero,
                      const WidenedRows& rows, const int32_t* bias, int32_t* sums, int threads) {
  products(w, a, a_zero, rows, bias, sums, threads, [](int64_t, int64_t) {});
}

std::unique_ptr<Kernel> make_widened_kernel(WidenedWeights weights, OutputSpec output,
                                            const WidenedProduct& how, int threads) {
  return std::make_unique<WidenedKernel>(std::move(weights), std::move(output), how, threads);
}

}  // namespace cleave::quantize_detail
