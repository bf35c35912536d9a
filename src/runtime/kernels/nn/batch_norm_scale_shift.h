// An inference BatchNormalization with constant statistics as a per-channel scale and shift.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/kernel.h"

namespace cleave {

/// Floats laid out as [rows][pixels][lanes], row r holding channel group r % groups: nChw16c is
/// groups = C / 16 (rounded up) and lanes = 16, plain NC... is groups = C and lanes = 1,
/// channels-last (and plain [N, C]) is groups = 1 and lanes = C.
struct ScaleShiftShape {
  int64_t rows = 1, groups = 1, pixels = 1, lanes = 1;
};

/// out = x * scale[c] + shift[c] (then max(., 0) when `relu`) over `shape`, with `scale` and
/// `shift` holding groups * lanes values in the data's channel order (padding lanes 0, so that
/// a blocked layout's padding channels stay 0), on up to `threads` OpenMP threads, in the
/// widest vector code the CPU has (under ONEDNN_MAX_CPU_ISA). A multiply then an add, each
/// rounded: the same bits on every instruction set and team size.
void scale_shift_loops(const float* x, float* out, const float* scale, const float* shift,
                       const ScaleShiftShape& shape, bool relu, int threads);

/// The kernel of a BatchNormalization that can run as y = x * a[c] + b[c] (a = scale /
/// sqrt(var + epsilon), b = bias - mean * a, computed once here), with the optional fused Relu
/// (`activation = "Relu"`), as ONNX Runtime runs it: inference form, all four parameters
/// constant floats of one value per channel, x float in a plain, channel-blocked (4, 8, 16) or
/// channels-last layout. nullptr otherwise (oneDNN's batch normalization then runs it, and
/// reports what is invalid).
std::unique_ptr<Kernel> try_scale_shift_batch_norm(const KernelContext& context);

}  // namespace cleave
