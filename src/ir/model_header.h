// What a model says about itself besides its values and nodes, carried to graphs made from it.
#pragma once

#include "ir/graph.h"

namespace cleave {

/// A graph with `model`'s name, opset imports, IR version, producer, doc string and metadata,
/// and no values or nodes: where a sub-model or a skeleton of `model` starts.
Graph empty_graph_like(const Graph& model);

}  // namespace cleave
