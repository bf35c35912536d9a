// Common-subexpression elimination: nodes computing the same op on the same inputs run once.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Merges nodes of the same domain, op type, attributes and inputs (in order): readers of the
/// duplicate's outputs read the kept node's instead. One topological sweep reaches the fixed
/// point, since readers of merged nodes are visited after their inputs were merged. Graph output
/// names never change: when the duplicate writes a graph output (or a value a control-flow body
/// reads by name) the other node is dropped instead, and when both do, both stay. Never merged:
/// random ops and Dropout, nodes with graph attributes (If, Loop, Scan), nodes without inputs
/// other than Constant, and ops outside the standard, ML and Microsoft domains. Counts: "nodes
/// merged", "kept for graph output names".
PassResult eliminate_common_subexpressions(Graph& graph);

}  // namespace cleave
