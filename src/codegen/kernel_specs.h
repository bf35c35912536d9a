// What each node's kernel produces, found by preparing every kernel once as the executors do.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace cleave {

/// Per NodeId, the output specs (type, shape, oneDNN layout, alias) of its kernel for the
/// seeded random inputs `cleave run` uses: every node prepared and run once in a topological
/// order with `threads` intra-op threads and the executors' layout rules (`blocked_layouts`,
/// `family`). Throws the kernels' errors naming the node.
std::vector<std::vector<OutputSpec>> prepare_kernel_specs(const Graph& graph, int threads,
                                                          bool blocked_layouts,
                                                          ConvolutionFamily family);

/// A copy of `graph` whose node outputs carry the types and shapes its kernels produce (for
/// values that shape inference left without a static shape).
Graph with_prepared_shapes(const Graph& graph);

}  // namespace cleave
