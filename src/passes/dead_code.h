// Dead-code elimination: drops nodes and initializers that no graph output depends on.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Removes every node none of whose outputs reaches a graph output (through node inputs or
/// the by-name reads of control-flow bodies), then every initializer nothing reads that is no
/// graph output. Graph inputs stay, used or not: they are the model's interface. Counts:
/// "nodes removed", "initializers removed".
PassResult eliminate_dead_code(Graph& graph);

}  // namespace cleave
