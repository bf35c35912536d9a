// Unrolling static loops (thesis ch. 4): Loop, Scan, LSTM and GRU become per-step nodes.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace cleave {

struct UnrollReport {
  int64_t loops = 0;  ///< Loop and Scan nodes unrolled.
  int64_t rnns = 0;   ///< LSTM and GRU nodes unrolled.
  int64_t steps = 0;  ///< Iterations written out, over all of them.
  int64_t nodes_added = 0;
};

/// Rewrites every ONNX Loop with a constant trip count and no data-dependent condition, every
/// Scan whose scanned axis has a static length, and every LSTM/GRU (weights as initializers,
/// static sequence length) into the nodes of each step: the body inlined once per iteration,
/// RNN steps as Concat/Gemm/Sigmoid/Tanh/Mul/Add. Values keep their names where they are graph
/// outputs. Throws Error naming `origin`, the node and the reason for a Loop whose trip count
/// is not a constant or whose condition the body computes, and for RNN options it does not
/// write out (clip, sequence_lens, layout 1, other activations). Nested loops are unrolled
/// from the outside in. Shapes of the new values are left for infer_shapes.
UnrollReport unroll_static_loops(Graph& graph, const std::string& origin);

/// True when the graph has a Loop, Scan, LSTM or GRU node.
bool has_loops(const Graph& graph);

}  // namespace cleave
