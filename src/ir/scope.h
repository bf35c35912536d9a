// Outer-scope reads of control-flow bodies (If/Loop/Scan): the implicit inputs of their nodes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
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

/// The attribute that names, on an If/Loop/Scan node, the values make_captures_explicit
/// appended to its inputs (in order). The ONNX writer leaves both out.
inline constexpr std::string_view kCapturesAttribute = "cleave.captures";

/// Appends each control-flow node's implicit inputs to its inputs, named in
/// kCapturesAttribute, so that execution order, liveness, plans and hand-offs between workers
/// treat them as the reads they are, and a kernel receives their values. Returns the nodes
/// changed; a node already changed is left alone.
int make_captures_explicit(Graph& graph);

/// Trailing inputs of `node` that make_captures_explicit appended (0 for any other node).
std::size_t captured_input_count(const Node& node);

}  // namespace cleave
