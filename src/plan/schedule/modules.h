// Reachability and the module structure of a task graph that MILP-SPLIT and its lower bound use.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/task_graph.h"

namespace cleave {

/// The transitive closure of the DAG: one bit row per task (tasks it reaches by a path).
class Reachability {
 public:
  explicit Reachability(const TaskGraph& graph);
  /// A path of one or more edges leads from `from` to `to`.
  bool reaches(int from, int to) const {
    return (rows_[static_cast<std::size_t>(from) * words_ + static_cast<std::size_t>(to) / 64] >>
            (static_cast<std::size_t>(to) % 64)) &
           1u;
  }
  /// One of the two must run before the other in every schedule.
  bool ordered(int a, int b) const { return reaches(a, b) || reaches(b, a); }

 private:
  std::size_t words_ = 0;
  std::vector<uint64_t> rows_;
};

/// How two consecutive modules of a single-channel chain meet.
struct ModuleJoint {
  /// The task ending the earlier module. For a bridge, the edges from it to `consumer` are
  /// the only ones between the modules; for an articulation point, `consumer` is -1 and the
  /// later module starts with a zero-time copy of `producer` that must share its device (the
  /// paper's dummy node and zero-cost edge).
  int producer = -1;
  int consumer = -1;
};

/// A split of the tasks into modules listed so that every edge goes from a module to itself or
/// to a later one.
struct ModuleSplit {
  std::vector<std::vector<int>> modules;  ///< Task ids, each sorted.
  std::vector<int> module_of_task;
  /// The module chain meets at single bridges or articulation points (joints[t] joins modules
  /// t and t + 1): then the dynamic program over device pairs is exact.
  bool single_channel = false;
  std::vector<ModuleJoint> joints;
  int channels = 1;  ///< Channels the split was asked for (modules are (channels+1)-edge-
                     ///< connected components when above 1).
};

/// Single-channel modules: cuts at bridges and articulation points that every path from an
/// input to an output crosses (a virtual source before all inputs and a virtual sink after all
/// outputs make them the bridges and articulation points of the undirected graph). Slices of
/// one node (tasks sharing node and weight_group) stay together; when the graph is batched the
/// result is a module chain but not single_channel, since each slice has its own channel.
ModuleSplit single_channel_modules(const TaskGraph& graph);

/// Multi-channel modules: the (channels+1)-edge-connected components of the undirected graph
/// (Chang et al.; here by recursive minimum cuts), with components smaller than
/// `min_module_tasks` merged into the neighbour they share most edges with, and components
/// whose quotient graph would have a cycle merged, so the result is ordered. channels == 1 gives
/// single_channel_modules.
ModuleSplit multi_channel_modules(const TaskGraph& graph, int channels, int min_module_tasks = 3);

/// The subgraph induced by `tasks` (in that order; task i of the result is tasks[i]), on the
/// same machine, keeping per-edge bytes.
TaskGraph induced_subgraph(const TaskGraph& graph, const std::vector<int>& tasks);

/// Groups of tasks that are slices of one node of a batched graph (same non-negative
/// weight_group and same node); each other task is its own group. Per task, its group index.
std::vector<int> slice_groups(const TaskGraph& graph, int* group_count = nullptr);

}  // namespace cleave
