// Exact int8 matrix products as one f32 product where no partial sum can leave the integers f32
// holds (the bound of f32_int8_conv.h): one oneDNN pass where, without VNNI, the int8 matmul
// needs two (split_weights.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/kernel.h"

namespace cleave::quantize_detail {

/// Where the product finds its operands and how it writes its output.
struct F32MatmulOperands {
  std::size_t a = 0, b = 1, a_zero = 2, b_zero = 3;
  std::optional<std::size_t> bias;     ///< The int32 bias input (QGemm).
  std::optional<std::size_t> y_scale;  ///< Requantized (scales at 1, 4, this): else int32 out.
};

/// The product of data `at.a` (u8 or s8, [.., K], its dims before the last folded into `rows`)
/// and constant 2-D weights `at.b` ([K, N], u8 or s8) as an f32 one: the data converted to
/// a − a_zero in one pass, the weights to b − b_zero once here, oneDNN's f32 sums converted back
/// to int32 and written with the bias as the int8 path writes them (write_requantized), so
/// the output is the int8 path's bit for bit. nullptr where a column's Σ_k |b − b_zero| times the
/// data's largest |a − a_zero| reaches 2^24, or oneDNN offers only its reference code.
std::unique_ptr<Kernel> make_f32_int8_matmul(const KernelContext& context, int64_t rows, int64_t k,
                                             int64_t n, const std::vector<int64_t>& output_shape,
                                             const F32MatmulOperands& at);

}  // namespace cleave::quantize_detail
