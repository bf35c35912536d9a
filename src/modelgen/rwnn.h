// Generator of randomly wired networks (RWNN): a Relu + Conv at every node of a random DAG.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "modelgen/random_dag.h"

namespace cleave {

struct RwnnOptions {
  RandomDagOptions dag;   ///< Structure; dag.seed seeds the structure and the weights.
  int64_t channels = 16;  ///< Channels of every node's tensor.
  int64_t height = 32;
  int64_t width = 32;
  int64_t batch = 1;
  int64_t classes = 10;
};

/// The network as a Graph with random weights and every shape set:
///
///   input f32[batch,3,H,W] -> "stem" Conv3x3 to `channels` -> feeds the DAG's entry node
///   DAG node j of module t, with k inputs (its DAG predecessors; the stem for the entry):
///     k - 1 Adds "m<t>_n<j>_add<i>" summing the inputs in predecessor order, then
///     "m<t>_n<j>_relu" Relu and "m<t>_n<j>" Conv3x3 (same padding, channels to channels)
///   the exit node -> GlobalAveragePool -> Flatten -> Gemm -> output "logits"
///
/// Conv weights are He-normal scaled by 1/sqrt(k), which keeps the summed activations O(1).
/// Node count: 1 + sum over DAG nodes of (k + 1) + 3.
Graph generate_rwnn(const RwnnOptions& options);

/// Builds the network on a DAG drawn beforehand (same layout as generate_rwnn).
Graph build_rwnn(const RandomDag& dag, const RwnnOptions& options);

}  // namespace cleave
