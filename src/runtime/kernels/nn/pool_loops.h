// Max and average pooling in cleave's own AVX2 loops over channel-blocked and channels-last floats.
#pragma once

#include <cstdint>

namespace cleave {

/// A 2-D pooling over data laid out as [batch][groups][height][width][lanes]: nChw8c and
/// nChw16c are groups = C / block and lanes = block, nhwc is groups = 1 and lanes = C.
struct PoolLoopShape {
  int64_t batch = 1, groups = 1, lanes = 1;
  int64_t in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;  ///< ONNX convention: 1 = dense.
  int64_t pad_top = 0, pad_left = 0;
  /// The explicit end pads, without the extra ceil_mode adds: an average that counts pads
  /// counts these (as ONNX, PyTorch and ONNX Runtime do) and not the extra.
  int64_t pad_bottom = 0, pad_right = 0;
};

enum class PoolLoopKind { kMax, kAverageExcludePad, kAverageIncludePad };

/// Whether cleave pools with these loops: where its vector code is AVX2 (the CPU's widest, or
/// capped by ONEDNN_MAX_CPU_ISA). On AVX-512 oneDNN's pooling kernel is as fast or faster on
/// the CPUs measured, on AVX2 it is 3-4x slower on an Intel core (docs/results/isa.md).
bool pool_loops_available();

/// Pools `in` into `out` (both in the layout above) on up to `threads` OpenMP threads, in AVX2
/// code: only where pool_loops_available(). Windows that hold no input element give the lowest
/// float (max) or 0 (average).
void pool_loops(PoolLoopKind kind, const float* in, float* out, const PoolLoopShape& shape,
                int threads);

}  // namespace cleave
