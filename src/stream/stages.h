// Stage grouping: a graph cut into K contiguous stages (balanced by FLOPs) as a stream pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "stream/stream_ir.h"

namespace cleave {

struct StagedStream {
  Stream root;                       ///< A pipeline of one model filter per stage.
  std::vector<int64_t> stage_nodes;  ///< Nodes per stage.
  std::vector<int64_t> stage_flops;  ///< FLOPs per stage (one item).
  std::vector<int64_t> cut_values;   ///< Per cut between stages: tensors that cross it.
  /// Per stage: the summed `node_cost` the cut balanced (empty when it balanced FLOPs).
  std::vector<double> stage_cost;
};

/// Cuts `graph`'s topological order into `stages` contiguous groups of nodes with about equal
/// FLOPs (a node counts at least 1) and makes each a model filter: it pops one item per value
/// crossing the cut before it and pushes one per value crossing the cut after it (values a
/// later stage needs are passed through). Program items are the graph inputs round robin, the
/// outputs the graph outputs, as graph_to_stream has them. Throws Error when `stages` is not
/// in 1..(number of nodes).
StagedStream graph_to_stages(const Graph& graph, int stages, const std::string& name = "model");

/// As above, balancing `node_cost` (by NodeId, e.g. a cost table's seconds) instead of FLOPs.
StagedStream graph_to_stages(const Graph& graph, int stages, const std::string& name,
                             const std::vector<double>& node_cost);

/// Seconds `samples` samples take through the stages, each stage on a worker of its own:
/// every stage in turn for the first sample, then the slowest stage paces the rest (by
/// `stage_cost`; 0 when the cut balanced FLOPs). Hand-offs between stages are not priced.
double pipeline_seconds(const StagedStream& staged, int samples);

}  // namespace cleave
