// Sub-model extraction: a standalone ONNX model of a selection of a graph's nodes.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// The selected nodes as a graph of their own. Its inputs are the values the selection reads
/// from outside (the original graph inputs first, in their order, then others by id), its
/// outputs the values it produces that are graph outputs or read by other nodes (original
/// graph outputs first), and its initializers exactly those the selection reads. Reads from
/// control-flow bodies (implicit inputs) count as reads. Throws Error on an empty selection,
/// an unknown or repeated node id, or a selection whose results nobody reads.
Graph extract_subgraph(const Graph& graph, const std::vector<NodeId>& nodes);

/// extract_subgraph as an ONNX model that passes onnx::checker. Throws Error when a value
/// crossing the boundary has no known type (ONNX requires one for graph inputs and outputs).
onnx::ModelProto extract_submodel(const Graph& graph, const std::vector<NodeId>& nodes);

/// Writes extract_submodel(graph, nodes) to `path` atomically.
void extract_submodel_to_file(const Graph& graph, const std::vector<NodeId>& nodes,
                              const std::string& path);

}  // namespace cleave
