// Constant folding: computes nodes whose inputs are known with the runtime's own kernels.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

struct ConstantFoldingOptions {
  /// A node is left alone when its outputs together would need more bytes than this, so that
  /// folding never blows a model up (Expand or ConstantOfShape of a huge shape).
  int64_t max_folded_bytes = int64_t{64} << 20;
};

/// Replaces nodes whose results are known before any input arrives by initializers that hold
/// those results; the results keep their value names.
///
/// - `Constant` nodes become initializers.
/// - A node whose inputs are all constant (see is_constant) is run once with the runtime's
///   kernel for it; folded outputs count as constant for the nodes after it.
/// - `Shape` (and `Size`) of any value whose static shape is fully known folds even when the
///   value itself is not constant: that is what makes the Shape→Gather→Concat→Reshape chains of
///   exported PyTorch models constant.
///
/// Left alone: nodes without a kernel (or whose kernel refuses the inputs), random ops, nodes
/// with control-flow bodies, nodes one of whose outputs is a graph output (a graph output stays
/// produced by a node), and nodes over the size cap. Counts: "nodes folded",
/// "Constant nodes made initializers", "Shape nodes folded from static shapes", and the
/// skipped ones: "nodes without kernel", "nodes over size cap".
PassResult fold_constants(Graph& graph, const ConstantFoldingOptions& options = {});

}  // namespace cleave
