// Graphviz drawing of a graph with one path (the critical path) highlighted, and rendering it.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// DOT text: one box per node labelled op type, name and output type; graph inputs and outputs
/// as ellipses; initializers left out. Nodes of `highlighted_path` and the edges between
/// consecutive ones are drawn red and bold.
std::string graph_to_dot(const Graph& graph, const std::vector<NodeId>& highlighted_path);

/// Renders DOT text with Graphviz's `dot -T<format>` (svg, png, pdf, ...) into `path`,
/// atomically. Throws Error when `dot` is not installed or fails (its message included).
void render_dot(const std::string& dot_text, const std::string& format, const std::string& path);

}  // namespace cleave
