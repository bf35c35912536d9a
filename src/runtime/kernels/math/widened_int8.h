// Exact int8 products on AVX2 without VNNI, cleave's own: both operands widened to int16 and
// multiplied in pairs into int32 (vpmaddwd), which cannot saturate as oneDNN's u8·s8 int16 pair
// sums do, and takes s8 data as it takes u8 data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace cleave::quantize_detail {

/// s8 weights w[k, j] (k < depth, j < columns) packed for widened_products: the columns in
/// blocks of 8, each block's depth in pairs (an odd depth ends with a 0 weight).
struct WidenedWeights {
  int64_t depth = 0, columns = 0;
  std::vector<int8_t> packed;
};

/// Packs w[k, j] read at w + k·depth_stride + j·column_stride (a matmul's [K, N] weights:
/// strides N and 1; a convolution's [M, C·taps] ones: 1 and C·taps).
WidenedWeights pack_widened(const int8_t* w, int64_t depth, int64_t columns, int64_t depth_stride,
                            int64_t column_stride);

/// Whether widened_products runs here: cleave's vector path (which ONEDNN_MAX_CPU_ISA caps
/// too) has AVX2.
bool widened_products_available();

/// Where the data's rows are and where their sums go. Row r is in batch b = r / per_batch at
/// index i = r % per_batch; its depth values are contiguous from a + b·batch_stride +
/// i·row_stride, and its sum of column j goes to sums[b·out_batch_stride + i·out_row_stride +
/// j·out_column_stride].
struct WidenedRows {
  int64_t rows = 1, per_batch = 1;
  int64_t batch_stride = 0, row_stride = 0;
  int64_t out_batch_stride = 0, out_row_stride = 0, out_column_stride = 1;
};

/// sums = bias[j] (0 without one) + Σ_k (a[r, k] − a_zero)·w[k, j] for every row and column,
/// exact in int32, in one OpenMP region that widens the rows (into the calling thread's
/// StagingSlot::kInput) and then sums the column blocks, each a share of the team's. Needs
/// widened_products_available().
void widened_products(const WidenedWeights& w, const uint8_t* a, int32_t a_zero,
                      const WidenedRows& rows, const int32_t* bias, int32_t* sums, int threads);
void widened_products(const WidenedWeights& w, const int8_t* a, int32_t a_zero,
                      const WidenedRows& rows, const int32_t* bias, int32_t* sums, int threads);

/// Where the widened kernel finds its operands and how it writes its output.
struct WidenedProduct {
  std::size_t data = 0, weights = 1;   ///< Inputs: u8/s8 data, the (packed) s8 weights.
  int32_t data_zero = 0;               ///< Within [-128, 255], so that a − a_zero fits int16.
  WidenedRows rows;                    ///< The data's rows and the sums' places in the output.
  int64_t channels = 1;                ///< Output channels (a convolution's) or columns.
  int64_t channel_stride = 1;          ///< Elements between a channel's and the next's.
  std::optional<std::size_t> bias;     ///< The int32 bias input, added to every sum.
  std::optional<std::size_t> y_scale;  ///< Requantized (scales at 1, 4, this): else int32 out.
  std::string name;                    ///< What it computes, for implementation().
};

/// The kernel that writes widened_products of its data and `weights` (packed from constant
/// input `how.weights`, which it never reads) as `output` says: requantized (in the products'
/// region, past a barrier) or int32 sums.
std::unique_ptr<Kernel> make_widened_kernel(WidenedWeights weights, OutputSpec output,
                                            const WidenedProduct& how, int threads);

}  // namespace cleave::quantize_detail
