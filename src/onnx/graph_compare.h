// Structural equality of graphs, for round-trip checks of import and export.
#pragma once

#include <string>

#include "ir/graph.h"

namespace cleave {

/// True when both graphs have the same metadata, the same nodes in the same topological order
/// (op, domain, name, attributes with bodies compared recursively, inputs and outputs by value
/// name), the same graph inputs and outputs, and the same values (by name: type, shape,
/// initializer bytes, flags). Value and node ids may differ. On a difference, `difference`
/// (when given) receives a description naming where it is.
bool graphs_equal(const Graph& a, const Graph& b, std::string* difference = nullptr);

}  // namespace cleave
