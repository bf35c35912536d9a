// Channel-scale folding: a per-channel Mul in front of a Conv scales the Conv's weights instead.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Rewrites `Conv(Mul(x, s), W, ...)`, where `s` broadcasts along x's channel axis only
/// ([1, C, 1, ...] or a lower-rank [C, 1, ...]), into `Conv(x, Mul(W, s), ...)`. Convolution is
/// linear in each input channel and zero padding stays zero, so scaling input channel c of the
/// data or of the weights gives the same result. Only for a Conv of group 1 with constant
/// float weights that is the Mul's only reader, and only where the weights have fewer than half
/// the data's elements (they are scaled, then reordered for oneDNN, on every run): the Mul then
/// touches the weights instead of a whole activation. EfficientNet's squeeze-and-excitation
/// blocks end this way; their Muls took a tenth of a 2-thread run, most of it in the early,
/// wide layers. Results differ from the unfolded graph by rounding only. Muls with the
/// broadcast attribute of opsets before 7 are left alone.
/// Count: "channel scales folded into Conv weights".
PassResult fold_channel_scales(Graph& graph);

}  // namespace cleave
