// Dead-tap removal: kernel rows and columns of a Conv that only ever read padding are cut off.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Shrinks each Conv's kernel (constant float weights, explicit pads, static input spatial
/// dims) to the taps that read the input for at least one output position. A tap that only
/// ever reads padding multiplies zeros, so the smaller convolution computes the same output
/// (for finite weights). This is the case of a large dilation on a small feature map:
/// DeepLabV3's ASPP branch of dilation 36 on a 28x28 map is a 1x1 convolution, and oneDNN
/// would otherwise run the whole 3x3 (under AVX2 on its im2col path). Per spatial dim, the
/// outer dead taps go, the pads shrink by what they covered, and a dim left with one tap gets
/// dilation 1. A dim is kept as it is when the new pads would be negative.
/// Count: "Conv kernels shrunk".
PassResult remove_dead_taps(Graph& graph);

}  // namespace cleave
