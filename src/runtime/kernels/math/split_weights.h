// Exact int8 products on oneDNN without VNNI: the weights split into two halves whose
// products cannot saturate oneDNN's int16 pair sums, and the two int32 sums added here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave::quantize_detail {

/// Whether oneDNN's int8 products need the split: no VNNI, so its kernels multiply u8 by s8
/// with vpmaddubsw, which adds each pair of products into a saturating int16 (255·127·2 does
/// not fit). Weights w = 16·high + low, high in [-8, 7] and low in [0, 15], keep every pair
/// within 255·15·2.
bool int8_products_need_split();

/// s8 weights split into (high, low), both s8 and of `weights`' shape: weights = 16·high + low.
std::pair<Tensor, Tensor> split_weights(const Tensor& weights);

/// Where the split kernel finds its operands and how it writes its output.
struct SplitSums {
  std::size_t weights = 1;          ///< The weights input: run from the halves' packed copies.
  int64_t channels = 1;             ///< Output channels (a convolution's) or columns (a product's).
  int64_t channel_stride = 1;       ///< Sums between one channel's and the next's: 1 channels-last.
  std::optional<std::size_t> bias;  ///< The int32 bias input, added to every sum.
  std::optional<std::size_t> y_scale;  ///< Requantized (scales at 1, 4, this): else int32 out.
  int high_shift = 4;  ///< The first kernel's sums count 2^this times (0: two parts).
  std::string note = "weights split in two";  ///< Said after the first kernel's implementation.
};

/// The kernel that runs `high` and `low`, each writing int32 sums (in the same order: plain or
/// channels-last), and writes 2^high_shift·high + low + bias as `output` says: requantized to
/// u8/i8, or the int32 sums. The weights' halves, or the clamped data's sums and the excess's
/// (clamped_data.h).
std::unique_ptr<Kernel> make_split_sums_kernel(std::unique_ptr<Kernel> high,
                                               std::unique_ptr<Kernel> low, OutputSpec output,
                                               const SplitSums& how, int threads);

}  // namespace cleave::quantize_detail
