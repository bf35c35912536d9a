// Identity/Dropout removal: readers of a pass-through node read its input directly.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Removes Identity nodes, Pad nodes whose pads are all 0, and Dropout nodes that are the
/// identity at inference (no training_mode input, or a constant false one; the mask output
/// unused), rewiring their
/// readers to the input. Graph output names never change: when the output is a graph output,
/// the input's producer is made to write it directly; when that is impossible too (the input
/// is a graph input, an initializer, another graph output, or read by a control-flow body) the
/// node stays. Counts: "Identity nodes removed", "zero Pad nodes removed", "Dropout nodes
/// removed", and "kept for graph output names".
PassResult remove_identities(Graph& graph);

}  // namespace cleave
