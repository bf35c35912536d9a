// Exact int8 convolutions without VNNI in one oneDNN pass: u8 data clamped at 127, and the sums
// of the few values above 127 added by cleave's loops.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "runtime/kernel.h"
#include "runtime/kernels/nn/clamped_scan.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/tensor.h"

namespace cleave::quantize_detail {

/// The largest u8 value whose products with any s8 weight oneDNN's int16 pair sums hold
/// without VNNI: 127·128·2 = 32512 (255·128·2 does not fit, hence split_weights.h).
inline constexpr int kClampedDataMax = 127;

/// Runs `inner` on a copy of input `data` (u8, plain or in `data`'s layout) in which every
/// value above kClampedDataMax is kClampedDataMax. `clamped` is the tensor `inner` was built
/// to read (its shape and layout); the copy is made in the running thread's staging buffer
/// (StagingSlot::kRewrittenInput) by `scan` on up to `threads` threads, which lists the values
/// above the clamp in the same pass for the excess sums.
std::unique_ptr<Kernel> make_clamped_data_kernel(std::unique_ptr<Kernel> inner,
                                                 const Tensor& clamped, std::size_t data,
                                                 std::shared_ptr<ClampedScan> scan, int threads);

/// The scan of dense u8 data `data` (plain, or channels-last where `channels_last`).
ScannedData scanned_data(const Tensor& data, bool channels_last);

/// Where the excess kernel reads the data and writes its sums.
struct ExcessSums {
  std::size_t data = 0;             ///< The u8 data input.
  bool data_channels_last = false;  ///< The data dense channels-last (else plain).
  bool sums_channels_last = false;  ///< The sums dense channels-last (else plain).
};

/// Whether oneDNN's int8 convolution `implementation` of `p`, its weights packed as `weights`,
/// multiplies the data's channels 2j and 2j+1 of each group into one int16 pair sum (so that the
/// scan may clamp pairs: ClampedScan::set_paired): its AVX2/SSE4.1 kernels (jit_uni_int8*), whose
/// vpmaddubsw takes a broadcast dword of 4 consecutive channels against weights packed with 4
/// input channels innermost, on an even number of input channels per group.
bool pairs_adjacent_channels(std::string_view implementation, const dnnl::memory::desc& weights,
                             const conv_detail::ConvProblem& p);

/// Whether `layout` is channels-last with no padding: element i's channel is then i % channels.
bool dense_channels_last(const dnnl::memory::desc& layout, std::span<const int64_t> shape);

/// The kernel writing the int32 sums Σ (x − kClampedDataMax)·w of `p` over the data values x
/// above kClampedDataMax (padding and the rest add nothing): what the clamped data's sums lack.
/// Few such values: their products added row by row, read from `weights`, the clamped pass's
/// packed s8 weights (weight zero point 0; kept alive here, not copied) in any blocked layout.
/// Many: `dense` (may be null) runs on a copy of the data in the running thread's staging
/// buffer (StagingSlot::kRewrittenInput) filled with max(x − kClampedDataMax, 0), whose pairs
/// of products fit oneDNN's int16 sums too; `excess_data` is the tensor `dense` was built to
/// read (its shape and layout, the data's). The values above the clamp are `scan`'s lists when
/// the clamped pass just made them for this data (its limit set here), else `scan` lists them.
/// nullptr where `weights` is not a blocked layout.
std::unique_ptr<Kernel> make_excess_sums_kernel(const conv_detail::ConvProblem& p,
                                                const Tensor& data, const PackedCopy& weights,
                                                const ExcessSums& how, OutputSpec output,
                                                std::unique_ptr<Kernel> dense,
                                                const Tensor& excess_data,
                                                std::shared_ptr<ClampedScan> scan, int threads);

}  // namespace cleave::quantize_detail
