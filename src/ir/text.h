// The compact text form of a graph: one line per node, so tests read as text in, text out.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace cleave {

/// Prints a graph, e.g.
///
///     graph main [ai.onnx=17] (%x: f32[1,3,8,8]) {
///       @w1: f32[4,3,3,3]
///       %y: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
///       %z = Relu(%y)
///       return %z
///     }
///
/// `%name` is a value, `@name` an initializer (its data printed inline when it has at most
/// `max_inline_elements` elements, else left out), `_` an omitted optional input. A node's
/// name, when it has one that differs from its first output's, is printed as a quoted string
/// before the op: `%y = "conv1" Conv(...)`. A domain prefixes the op: `com.microsoft.Gelu`.
std::string print_graph(const Graph& graph, int max_inline_elements = 16);

/// Parses the text form. Values named only as node inputs must be defined earlier (graph
/// input, initializer, or a node output above). Throws Error with line and column.
Graph parse_graph(std::string_view text);

/// One value's type as the text form writes it: `f32[1,N,?]`, `f32` for unknown rank.
std::string print_type(DataType dtype, const Shape& shape);

}  // namespace cleave
