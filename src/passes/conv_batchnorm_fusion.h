// Conv+BatchNormalization fusion: folds an inference batch norm into the conv before it.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Folds each BatchNormalization (inference form: no training_mode, only its first output
/// used, spatial) that directly follows a Conv into that Conv, when the Conv's output has no
/// other reader and the Conv weights, bias and batch-norm parameters are float constants:
///
///     s = scale / sqrt(var + epsilon)     W' = W · s (per output channel)
///     b' = (b - mean) · s + B
///
/// The Conv then writes the batch norm's output (its name is kept). Weights used only by this
/// Conv are rewritten in place; shared ones are copied to a new initializer. Count:
/// "BatchNormalization nodes fused into Conv".
PassResult fuse_conv_batchnorm(Graph& graph);

}  // namespace cleave
