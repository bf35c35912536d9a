// cleave's widened int8 products (int16 pairs into int32) against their definition, element by
// element: u8 and s8 data, zero points at the ends of their ranges, odd depths, partial column
// blocks and row tiles, batched rows and a transposed output; rows in several chunks; the
// extreme values whose pairs no int16 sum holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

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
void expect_products_as_defined(const Shape& s, int32_t zero, bool with_bias,
                                bool extremes = false) {
  if (!quantize_detail::widened_products_available()) GTEST_SKIP() << "no AVX2";
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(std::numeric_limits<A>::lowest(),
                                           std::numeric_limits<A>::max());
  std::uniform_int_distribution<int> weight(-128, 127);
  // At the ends: the data at the end of its range farther from the zero point (|a − zero| is
  // 255 there for a zero point at the other end) or at the zero point.
  std::bernoulli_distribution coin(0.75);
  const int lowest = std::numeric_limits<A>::lowest(), highest = std::numeric_limits<A>::max();
  const int far = zero - lowest > highest - zero ? lowest : highest;
  const auto data_value = [&] { return extremes ? (coin(rng) ? far : zero) : value(rng); };
  const auto weight_value = [&] { return extremes ? (coin(rng) ? -128 : 127) : weight(rng); };
  WidenedRows rows;
  rows.rows = s.batches * s.per_batch;
  rows.per_batch = s.per_batch;
  rows.row_stride = 3;
  rows.batch_stride = 3 * (s.per_batch - 1) + s.depth;
  rows.out_batch_stride = s.columns * s.per_batch;
  rows.out_row_stride = 1;
  rows.out_column_stride = s.per_batch;
  std::vector<A> a(static_cast<std::size_t>(s.batches * rows.batch_stride));
  for (A& x : a) x = static_cast<A>(data_value());
  // Weights [columns, depth] as a convolution keeps them.
  std::vector<int8_t> w(static_cast<std::size_t>(s.columns * s.depth));
  for (int8_t& x : w) x = static_cast<int8_t>(weight_value());
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

// Data at |a − zero| = 255 or 0 and weights at -128 or 127: pairs of products up to 255·256
// in size, which an int16 pair sum (oneDNN's vpmaddubsw without VNNI) would saturate.
TEST(WidenedInt8, ExtremeValuesMatchTheDefinition) {
  expect_products_as_defined<uint8_t>({1, 9, 37, 19}, 0, true, true);
  expect_products_as_defined<uint8_t>({1, 9, 37, 19}, 255, false, true);
  expect_products_as_defined<int8_t>({2, 3, 64, 17}, 127, true, true);
}

// Rows of 1100 values (2200 bytes widened) by the hundred: the block pairs sweep the rows in
// chunks of about 256 KiB, so 300 rows make three chunks, the last one partial, on two threads.
TEST(WidenedInt8, RowsInSeveralChunksMatchTheDefinition) {
  expect_products_as_defined<uint8_t>({3, 100, 1100, 19}, 77, true);
}

// The kernel's one region on a team of two (rows widened, blocks summed, sums requantized, each
// a share of the team's) against the same kernel on one thread, and its int32 sums against the
// definition: 150 rows of depth 301 by 43 columns, 1.9 M products (enough to share).
TEST(WidenedInt8, TheKernelOnTwoThreadsWritesTheOneThreadBytes) {
  if (!quantize_detail::widened_products_available()) GTEST_SKIP() << "no AVX2";
  const int64_t rows = 150, depth = 301, columns = 43;
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127);
  Tensor a = Tensor::allocate(DataType::kUInt8, {rows, depth});
  for (int64_t i = 0; i < a.element_count(); ++i)
    a.data<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  std::vector<int8_t> w(static_cast<std::size_t>(depth * columns));  // [depth, columns]
  for (int8_t& v : w) v = static_cast<int8_t>(weight(rng));
  const auto scalar = [](DataType type, double value) {
    Tensor t = Tensor::allocate(type, {});
    if (type == DataType::kFloat)
      *t.data<float>() = static_cast<float>(value);
    else
      *t.data<uint8_t>() = static_cast<uint8_t>(value);
    return t;
  };
  const Tensor x_scale = scalar(DataType::kFloat, 0.05), x_zero = scalar(DataType::kUInt8, 131);
  const Tensor y_scale = scalar(DataType::kFloat, 3.0), y_zero = scalar(DataType::kUInt8, 128);
  Tensor w_scale = Tensor::allocate(DataType::kFloat, {columns});
  Tensor bias = Tensor::allocate(DataType::kInt32, {columns});
  for (int64_t j = 0; j < columns; ++j) {
    w_scale.data<float>()[j] = 0.001f * static_cast<float>(j + 1);
    bias.data<int32_t>()[j] = static_cast<int32_t>(977 * j - 20000);
  }
  const Tensor weights = Tensor::allocate(DataType::kInt8, {depth, columns});  // Never read.
  const std::vector<const Tensor*> inputs{&a,      &x_scale, &x_zero, &weights, &w_scale,
                                          &x_zero, &y_scale, &y_zero, &bias};
  quantize_detail::WidenedProduct how;
  how.data_zero = 131;
  how.rows.rows = rows;
  how.rows.per_batch = rows;
  how.rows.row_stride = depth;
  how.rows.out_row_stride = columns;
  how.channels = columns;
  how.bias = 8;
  how.y_scale = 6;
  how.weights = 3;
  const auto run = [&](const quantize_detail::WidenedProduct& as, DataType type, int threads,
                       uint8_t fill) {
    OutputSpec spec;
    spec.dtype = type;
    spec.shape = {rows, columns};
    auto kernel = quantize_detail::make_widened_kernel(
        quantize_detail::pack_widened(w.data(), depth, columns, columns, 1), spec, as, threads);
    Tensor out = Tensor::allocate(type, {rows, columns});
    std::fill_n(static_cast<uint8_t*>(out.raw()), out.byte_size(), fill);
    std::vector<Tensor*> outputs{&out};
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    kernel->run(inputs, outputs, stream);
    return out;
  };
  const Tensor one = run(how, DataType::kUInt8, 1, 0xAA), two = run(how, DataType::kUInt8, 2, 0x55);
  int differing = 0, saturated = 0;
  for (int64_t i = 0; i < one.element_count(); ++i) {
    differing += one.data<uint8_t>()[i] != two.data<uint8_t>()[i];
    saturated += one.data<uint8_t>()[i] == 0 || one.data<uint8_t>()[i] == 255;
  }
  EXPECT_EQ(differing, 0) << "of " << one.element_count();
  EXPECT_LT(saturated, one.element_count() / 4) << "the requantized bytes say little";
  quantize_detail::WidenedProduct sums = how;
  sums.y_scale.reset();
  const Tensor exact = run(sums, DataType::kInt32, 2, 0x55);
  differing = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < columns; ++j) {
      int32_t expected = bias.data<int32_t>()[j];
      for (int64_t k = 0; k < depth; ++k) {
        expected += (a.data<uint8_t>()[r * depth + k] - 131) * w[k * columns + j];
      }
      differing += exact.data<int32_t>()[r * columns + j] != expected;
    }
  }
  EXPECT_EQ(differing, 0) << "of " << exact.element_count();
}

}  // namespace
}  // namespace cleave
