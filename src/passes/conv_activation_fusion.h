// Conv+Relu, Conv+Clip, Conv+SiLU and BatchNormalization+Relu fusion into attributes the
// oneDNN kernels apply as post-ops or flags.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Removes each Relu or Clip (with constant bounds: attributes before opset 11, inputs from
/// opset 11) that directly follows a Conv whose output has no other reader, and records it on
/// the Conv as attributes, which the runtime's Conv kernel applies as a oneDNN post-op; and
/// each SiLU written as Mul(c, Sigmoid(c)) (EfficientNet, MnasNet heads), or hard swish written
/// as Mul(c, HardSigmoid[alpha=1/6, beta=1/2](c)) (MobileNet-V3), where c is such a Conv output
/// read only by the two:
///
///     activation = "Relu" | "Clip" | "Swish" | "HardSwish"
///     activation_min, activation_max   (floats, Clip only; ±FLT_MAX when a bound is absent)
///
/// The Conv keeps op type "Conv" and domain "", and writes the activation's output (its name
/// is kept). These attributes are not ONNX: onnx::checker rejects unknown attributes on Conv
/// ("Unrecognized attribute: activation for operator Conv"), so this pass is for graphs that
/// cleave runs itself, never for ones it exports. A Relu after a BatchNormalization (inference
/// outputs only) is fused the same way, as `activation = "Relu"` on the BatchNormalization.
/// An Add of such a Conv's output and another value of the same shape (a residual connection)
/// becomes `sum_input = 3` on the Conv, which then reads that value as input 3 (the bias slot
/// before it may be empty) and adds it before its activation, so the Relu that usually follows
/// fuses too.
/// Counts: "Relu nodes fused into Conv", "Clip nodes fused into Conv", "Sigmoid+Mul pairs
/// fused into Conv", "HardSigmoid+Mul pairs fused into Conv", "Add nodes fused into Conv as a sum",
/// "Relu nodes fused into BatchNormalization".
PassResult fuse_conv_activations(Graph& graph);

}  // namespace cleave
