// Per-channel loops over plain, channel-blocked and channels-last floats, in the widest vector
// code.
#pragma once

#include <cstdint>
#include <optional>

namespace cleave {

/// Floats laid out as [rows][pixels][lanes], row r holding channel group r % groups: nChw16c is
/// groups = C / 16 (rounded up) and lanes = 16, plain NC... is groups = C and lanes = 1,
/// channels-last (and plain [N, C]) is groups = 1 and lanes = C.
struct ChannelRows {
  int64_t rows = 1, groups = 1, pixels = 1, lanes = 1;
};

class Tensor;

/// How float tensor x ([N, C, ...], rank 2 or more) lies as ChannelRows: plain, channel-blocked
/// (4, 8, 16) or channels-last; nullopt for another layout.
std::optional<ChannelRows> channel_rows_of(const Tensor& x);

/// out = x * scale[c] + shift[c] (then max(., 0) when `relu`) over `shape`, with `scale` and
/// `shift` holding groups * lanes values in the data's channel order (padding lanes 0, so that
/// a blocked layout's padding channels stay 0), on up to `threads` OpenMP threads, in the
/// widest vector code the CPU has (under ONEDNN_MAX_CPU_ISA). A multiply then an add, each
/// rounded: the same bits on every instruction set and team size.
void scale_shift_loops(const float* x, float* out, const float* scale, const float* shift,
                       const ChannelRows& shape, bool relu, int threads);

enum class ChannelOp { kAdd, kSub, kMul, kDiv };

/// out = x op v[c] over `shape`, `values` holding groups * lanes values as for
/// scale_shift_loops (padding lanes chosen by the caller so that padding channels stay 0), on
/// up to `threads` OpenMP threads once there are `min_parallel_floats` floats, in the widest
/// vector code the CPU has: one rounding per element, the same bits everywhere.
void channel_op_loops(ChannelOp op, const float* x, float* out, const float* values,
                      const ChannelRows& shape, int threads, int64_t min_parallel_floats);

/// out[row * lanes + lane] = the mean over the row's pixels of x[row][pixel][lane]: a global
/// average pool whose output keeps the input's channel order (for nChw16c, the nChw16c of one
/// pixel). Sums in a fixed order (pixel p into partial sum p % 4, then the four added), so
/// the bits do not depend on the instruction set or on `threads`.
void global_average_loops(const float* x, float* out, const ChannelRows& shape, int threads);

}  // namespace cleave
