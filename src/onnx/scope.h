// Outer-scope reads of control-flow bodies (If/Loop/Scan): the implicit inputs of their nodes.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// Names a graph reads from its enclosing scopes, in first-seen order.
///
/// A body graph of If/Loop/Scan refers to values of the enclosing graphs by name. The importer
/// keeps such a reference as a value of the body that has no producer and is neither a graph
/// input nor an initializer (a "captured" value); nested bodies' captures that the body itself
/// does not define count too.
std::vector<std::string> outer_scope_names(const Graph& body);

/// Values of `graph` that the sub-graph attributes of `node` read by name: the node's implicit
/// inputs, which ONNX does not list among its inputs but which it depends on all the same.
std::vector<ValueId> implicit_inputs(const Graph& graph, NodeId node);

/// Live nodes in a topological order that respects explicit and implicit inputs, ties broken by
/// id. Throws Error naming a node on a cycle.
std::vector<NodeId> scoped_topological_order(const Graph& graph);

}  // namespace cleave
