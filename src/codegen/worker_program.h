// A plan as the code generators see it: per worker, the graph nodes it runs in order.
#pragma once

#include <string>
#include <vector>

#include "frontend/model_plan.h"
#include "ir/graph.h"

namespace cleave {

struct WorkerProgram {
  int workers = 1;
  int threads_per_worker = 1;
  std::string strategy;
  std::vector<std::vector<NodeId>> order;  ///< Per worker, its nodes in execution order.
  std::vector<int> worker_of_node;         ///< Per NodeId; -1 for nodes no task runs.
  std::vector<int> position_of_node;       ///< Per NodeId: index into its worker's order.
  std::vector<std::vector<int>> cores;     ///< Per worker, the CPU cores the plan gives it.
  /// Per ValueId, the workers other than the producer's that read it (sorted, unique).
  std::vector<std::vector<int>> remote_readers;
};

/// Checks that the plan runs every live node of `graph` exactly once for one sample (cloned
/// or multi-sample plans are refused, naming the node or the sample count) and derives each
/// worker's node order and the values that cross workers.
WorkerProgram worker_program(const Graph& graph, const ModelPlan& plan);

/// A name usable as a C++ or Python identifier: other characters become '_', a leading digit
/// gets a '_' before it, and an empty name becomes "_".
std::string identifier_for(const std::string& name);

}  // namespace cleave
