// An inference BatchNormalization with constant statistics as a per-channel scale and shift.
#pragma once

#include <memory>

#include "runtime/kernel.h"
#include "runtime/kernels/channel_loops.h"

namespace cleave {

/// The kernel of a BatchNormalization that can run as y = x * a[c] + b[c] (a = scale /
/// sqrt(var + epsilon), b = bias - mean * a, computed once here), with the optional fused Relu
/// (`activation = "Relu"`), as ONNX Runtime runs it: inference form, all four parameters
/// constant floats of one value per channel, x float in a plain, channel-blocked (4, 8, 16) or
/// channels-last layout. nullptr otherwise (oneDNN's batch normalization then runs it, and
/// reports what is invalid).
std::unique_ptr<Kernel> try_scale_shift_batch_norm(const KernelContext& context);

}  // namespace cleave
