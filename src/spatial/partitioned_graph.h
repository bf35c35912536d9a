// The graph rewrite of a split: every machine's slices, crops, joins and transfer pieces as nodes.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "spatial/naive_partition.h"
#include "spatial/optimizer.h"

namespace cleave {

/// A value produced on one machine and read on another: a region of a tensor the sender holds.
struct SplitTransfer {
  NodeId slice = -1;  ///< The Slice node (on `from`) cutting the region out.
  int from = 0;
  int to = 0;
  ValueId source = kNoValue;  ///< The sender's held tensor.
  Box region;                 ///< In the source's own coordinates.
  ValueId piece = kNoValue;   ///< The Slice's output: what `to` receives.
  int64_t bytes = 0;
};

/// The rewritten graph: computes exactly what the model computes, its graph outputs under their
/// own names on machine 0. Node ids are in a topological order.
struct PartitionedGraph {
  Graph graph;
  int machines = 1;
  std::vector<int> machine;    ///< Per NodeId of `graph`: the machine that runs it.
  std::vector<NodeId> origin;  ///< Per NodeId: the model's node it is a slice of, or -1.
  std::vector<SplitTransfer> transfers;
  /// Per model node that reads data from another machine: counted once (synchronisation).
  int sync_points = 0;
  int join_cases[4] = {0, 0, 0, 0};  ///< Per JoinCase: how often each arose.
};

/// Builds the partitioned graph of `graph` for the partition and held regions. A model node
/// becomes one node per machine that holds part of its output (pads, group, constant inputs
/// as the region rules say; weights sliced where the split cuts them); its inputs are
/// assembled on that machine from what it holds and from pieces of other machines.
PartitionedGraph build_partitioned_graph(const Graph& graph, const Partition& partition,
                                         const Regions& regions, JoinMode mode);

/// The elements of `data` in `box` (row-major), as a new constant; sizes only where `data`
/// has no bytes (a weight left in its file).
TensorData slice_tensor_data(const TensorData& data, const Box& box);

}  // namespace cleave
