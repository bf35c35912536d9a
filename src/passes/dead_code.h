// Dead-code elimination: drops nodes and initializers that no graph output depends on.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Which values a graph output depends on (indexed by ValueId): the outputs, what bodies read
/// by name, and every input of a node that produces such a value; `order` is topological.
std::vector<bool> live_values(const Graph& graph, const std::vector<NodeId>& order);

/// Removes every node none of whose outputs reaches a graph output (through node inputs or
/// the by-name reads of control-flow bodies), then every initializer nothing reads that is no
/// graph output. Graph inputs stay, used or not: they are the model's interface. Counts:
/// "nodes removed", "initializers removed".
PassResult eliminate_dead_code(Graph& graph);

}  // namespace cleave
