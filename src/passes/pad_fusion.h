// Zero-Pad folding: a constant-zero Pad in front of a Conv or AveragePool becomes its padding.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Folds a Pad (mode "constant", value 0, constant non-negative pads on the spatial dims only)
/// into each reader that can pad by itself: a Conv (its pads grow by the Pad's) and an
/// AveragePool with ceil_mode 0 (its pads grow and count_include_pad becomes 1, which is what
/// averaging over explicit zeros means; only when it had no pads of its own or already counted
/// them). Readers without auto_pad only. The Pad stays for any other reader and is left for
/// dead-code elimination otherwise. PyTorch exports Inception's `avg_pool2d(padding=1)` this
/// way; as a plain-layout op the Pad forced layout conversions on both sides.
/// Counts: "Pads folded into Conv", "Pads folded into AveragePool".
PassResult fold_pads(Graph& graph);

}  // namespace cleave
