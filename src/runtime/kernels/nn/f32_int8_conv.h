// Exact int8 convolutions as one f32 convolution where no partial sum can leave the integers f32
// holds: one oneDNN pass where, without VNNI, the int8 kernels need two (split_weights.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/tensor.h"

namespace cleave::quantize_detail {

/// Integers of magnitude up to 2^24 are exact in f32; a sum stays exact while each partial sum
/// does.
inline constexpr int64_t kExactF32Integers = int64_t{1} << 24;

/// The largest |x − zero| over the values of 8-bit `type` (u8 or i8): 255 for u8 data of zero
/// point 0, 128 for u8 data of zero point 128.
int64_t largest_deviation(DataType type, int32_t zero);

/// Whether f32 sums of (x − x_zero)(w − weight_zero[m]) are the exact int32 sums in any order of
/// addition: for every output channel m, `largest` · Σ_k |w[m, k] − weight_zero[m]| < 2^24, so
/// each partial sum is an integer of smaller magnitude (and each product one of at most
/// 255 · 255). `weights` (u8 or s8) hold `weight_zero.size()` rows of equal length. With weights
/// of magnitude 128 and `largest` 255 this is K · 255 · 128 < 2^24: K ≤ 514.
bool f32_sums_exact(const Tensor& weights, const std::vector<int32_t>& weight_zero,
                    int64_t largest);

/// Where an int8 convolution node keeps its operands, and whether it requantizes.
struct F32ConvOperands {
  std::size_t x = 0, w = 1, x_zero = 2, w_zero = 3;
  bool requantized = false;  ///< QLinearConv: scales at 1, 4 and 6, y's zero point at 7, bias 8.
};

/// When the f32 route is taken (CLEAVE_INT8_F32): kAuto for convolutions where oneDNN's int8
/// products need the split, the data is not the clamped path's (u8 of zero point 0) and
/// f32_route_pays_off; kAlways wherever exact, matrix products too (f32_int8_matmul.h: for
/// measurements); kNever not.
enum class F32Route { kAuto, kAlways, kNever };
/// Parses a CLEAVE_INT8_F32 value; throws Error naming `origin` and the values accepted.
F32Route parse_f32_route(std::string_view text, std::string_view origin);
F32Route f32_route_from_environment();

/// Writes `count` f32 sums, each an exact integer (the route's), as write_requantized writes
/// int32 ones (channel of sum i: (i / channel_stride) % channels; `bias` may be null), on up
/// to `threads` threads from 4096 sums.
void write_requantized_f32(const Requantize& requantize, const float* sums, int64_t count,
                           int64_t channels, int64_t channel_stride, void* out, const int32_t* bias,
                           int threads);

/// Whether, without VNNI, the f32 route beats the int8 kernels' two passes on `p`: where each
/// group's output channels are at least twice its input channels (image convolutions, 1x1
/// expansions) and each output sums at most kF32RouteMaxReduction products. Per node in
/// efficientnet_b1_int8 and mobilenet_v3_small_int8 at 1 thread under ONEDNN_MAX_CPU_ISA=AVX2
/// (docs/results/heldout-speed.md, 2026-12-01) such convolutions took 0.36-0.95 of the split's
/// time; 1x1 reductions (96->24, 144->24, 672->112, 1152->192: 1.07-1.25, 32->16: 1.34) and
/// the expansions of K = 320 on 4x4 positions (1.10-1.13) lost, their data's f32 copy and f32
/// weights' bytes outweighing the second pass.
bool f32_route_pays_off(const conv_detail::ConvProblem& p);
inline constexpr int64_t kF32RouteMaxReduction = 256;

/// The convolution `p` of `context` as an f32 one: the data converted to x − x_zero in one pass
/// (plain, or channels-last where it comes so or the output may be), the weights to
/// w − w_zero once here, oneDNN's f32 sums converted back to int32 and written with the bias as
/// the int8 path writes them (write_requantized), so the output is the int8 path's bit for bit.
/// nullptr where f32_sums_exact fails, the zero points are not constant, the data comes in a
/// layout other than plain or dense channels-last, or oneDNN offers only its reference code.
std::unique_ptr<Kernel> make_f32_int8_conv(const KernelContext& context,
                                           const conv_detail::ConvProblem& p,
                                           const F32ConvOperands& at);

/// make_f32_int8_conv where CLEAVE_INT8_F32 takes the route for `p`, else nullptr: "auto" where
/// oneDNN's int8 products need the split, the data is s8 or of a nonzero zero point (u8 of
/// zero point 0 keeps the clamped path) and f32_route_pays_off; "always" wherever exact. The
/// int8 kernel choice calls this `first` (before any other: "always") and again after the
/// depthwise kernel that needs no split ("auto").
std::unique_ptr<Kernel> try_f32_int8_conv(const KernelContext& context,
                                          const conv_detail::ConvProblem& p,
                                          const F32ConvOperands& at, bool first);

}  // namespace cleave::quantize_detail
