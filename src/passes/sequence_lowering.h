// Sequence lowering: tensor sequences whose elements are known at load become plain tensors.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Follows each sequence from where it is made (SequenceEmpty, SequenceConstruct,
/// SplitToSequence) through SequenceInsert and SequenceErase at constant positions, and
/// rewrites its readers: SequenceAt at a constant position becomes an Identity of the element,
/// SequenceLength a Constant, ConcatFromSequence a Concat (of Unsqueezes with new_axis).
/// SplitToSequence becomes a Split (and Squeezes without keepdims) when its pieces are known: no
/// split input, or a constant one. Sequences read in any other way (a loop body, a graph
/// output) are left as they are; their nodes then have no kernel. Dead code removes the
/// sequence nodes left unread. Count: "sequence readers lowered".
PassResult lower_sequences(Graph& graph);

}  // namespace cleave
