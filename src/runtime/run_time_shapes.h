// Which nodes make values whose shape is known only at run time: the ones generated code sizes
// during the run, and the ones whose buffers the executors take from a pool of size classes.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// Per NodeId: whether the node's outputs have a shape known only at run time. It runs a
/// sub-graph (If, Loop, Scan), makes an output shaped by the values it reads (NonZero,
/// NonMaxSuppression, Unique, Compress), or reads a value such a node computes, directly or
/// through others.
std::vector<bool> run_time_nodes(const Graph& graph);
/// Why run_time_nodes() marks node `id`, for messages: "runs a sub-graph (attribute 'x')".
std::string run_time_reason(const Graph& graph, NodeId id);

}  // namespace cleave
