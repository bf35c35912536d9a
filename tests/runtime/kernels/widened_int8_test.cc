// cleave's widened int8 products (int16 pairs into int32) against their definition, element by
// element: u8 and s8 data, zero points at the ends of their ranges, odd depths, partial column
// blocks and row tiles, batched rows and a transposed output.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "runtime/kernels/math/widened_int8.h"

namespace cleave {
namespace {

using quantize_detail::WidenedRows;

struct Shape {
  int64_t batches, per_batch, depth, columns;
};

// Data rows `depth` long at a stride of 3 within each batch (overlapping windows, as a strided
// convolution's), sums written channel-major (out[b][j][i]).
template <typename A>
void expect_products_as_defined(const Shape& s, int32_t zero, bool with_bias) {
  if (!quantize_detail::widened_products_available()) GTEST_SKIP() << "no AVX2";
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(std::numeric_limits<A>::lowest(),
                                           std::numeric_limits<A>::max());
  std::uniform_int_distribution<int> weight(-128, 127);
  WidenedRows rows;
  rows.rows = s.batches * s.per_batch;
  rows.per_batch = s.per_batch;
  rows.row_stride = 3;
  rows.batch_stride = 3 * (s.per_batch - 1) + s.depth;
  rows.out_batch_stride = s.columns * s.per_batch;
  rows.out_row_stride = 1;
  rows.out_column_stride = s.per_batch;
  std::vector<A> a(static_cast<std::size_t>(s.batches * rows.batch_stride));
  for (A& v : a) v = static_cast<A>(value(rng));
  // Weights [columns, depth] as a convolution keeps them.
  std::vector<int8_t> w(static_cast<std::size_t>(s.columns * s.depth));
  for (int8_t& v : w) v = static_cast<int8_t>(weight(rng));
  std::vector<int32_t> bias(static_cast<std::size_t>(s.columns));
  for (std::size_t j = 0; j < bias.size(); ++j) bias[j] = 1000 * static_cast<int32_t>(j) - 7000;
  const auto packed = quantize_detail::pack_widened(w.data(), s.depth, s.columns, 1, s.depth);
  std::vector<int32_t> sums(static_cast<std::size_t>(rows.rows * s.columns), -1);
  quantize_detail::widened_products(packed, a.data(), zero, rows, with_bias ? bias.data() : nullptr,
                                    sums.data(), 2);
  int differing = 0;
  for (int64_t b = 0; b < s.batches; ++b) {
    for (int64_t i = 0; i < s.per_batch; ++i) {
      for (int64_t j = 0; j < s.columns; ++j) {
        int32_t expected = with_bias ? bias[j] : 0;
        for (int64_t k = 0; k < s.depth; ++k) {
          expected += (static_cast<int32_t>(a[b * rows.batch_stride + i * 3 + k]) - zero) *
                      w[j * s.depth + k];
        }
        differing += sums[(b * s.columns + j) * s.per_batch + i] != expected;
      }
    }
  }
  EXPECT_EQ(differing, 0) << "of " << sums.size();
}

TEST(WidenedInt8, OneRowMatchesTheDefinition) {
  expect_products_as_defined<uint8_t>({1, 1, 33, 21}, 255, true);
}

TEST(WidenedInt8, PartialTilesOfU8RowsMatchTheDefinition) {
  expect_products_as_defined<uint8_t>({2, 7, 17, 30}, 0, false);
}

TEST(WidenedInt8, S8RowsMatchTheDefinition) {
  expect_products_as_defined<int8_t>({3, 5, 40, 9}, -128, true);
}

// Enough products for the threads to share the column blocks.
TEST(WidenedInt8, LargeProductsMatchTheDefinition) {
  expect_products_as_defined<uint8_t>({2, 50, 401, 67}, 131, true);
}

}  // namespace
}  // namespace cleave
