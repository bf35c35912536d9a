// Structural checks of a graph: acyclic, every input defined once, types and shapes consistent.
#pragma once

#include "ir/graph.h"

namespace cleave {

struct VerifyOptions {
  /// Control-flow bodies may read values of the enclosing graph by name.
  bool allow_outer_scope_values = false;
};

/// Throws Error naming the node (and value) at the first problem found.
void verify_graph(const Graph& graph, const VerifyOptions& options = {});

}  // namespace cleave
