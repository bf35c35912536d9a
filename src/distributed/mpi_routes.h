// Which values of a plan cross ranks, as numbered channels every rank enumerates alike.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "distributed/message.h"
#include "ir/graph.h"
#include "plan/task_graph.h"
#include "runtime/plan_inputs.h"

namespace cleave {

/// A value that crosses ranks once per run: produced by a task (or, for a graph input, held by
/// rank 0) on `from`, needed on `to`. Its index is the MPI tag.
struct Channel {
  int producer = -1;  ///< Task id; -1: a graph input that rank 0 sends.
  int output = 0;     ///< Output index of the producer's node.
  ValueId value = kNoValue;
  std::string name;  ///< The value's name.
  int sample = 0;    ///< Plan sample (hyperclustered plans).
  int from = 0;
  int to = 0;
  MessageExpectation expect;
};

/// Where rank 0 finds one graph output of one plan sample.
struct OutputRoute {
  enum class Kind { kConstant, kGraphInput, kTask } kind = Kind::kTask;
  ValueId value = kNoValue;
  int task = -1;  ///< kTask: the producer task (on rank 0, or sending to it).
  int output = 0;
};

struct MpiRoutes {
  std::vector<Channel> channels;
  /// Per task, per output of its node: the channels it feeds.
  std::vector<std::vector<std::vector<int>>> sends;
  /// (producer task, receiving rank) -> the channels of that task's outputs to that rank.
  std::map<std::pair<int, int>, std::vector<int>> task_to_rank;
  /// (graph input, sample, receiving rank) -> its channel.
  std::map<std::tuple<ValueId, int, int>, int> input_to_rank;
  /// Per plan sample, per graph output: where rank 0 gets it.
  std::vector<std::vector<OutputRoute>> outputs;
};

/// Numbers every value that crosses ranks under the plan (tasks of worker w run on rank w; graph
/// inputs start on rank 0; graph outputs end there). Throws Error naming the value when one
/// that crosses has no static type and shape, or when there are more channels than `max_tags`.
MpiRoutes route_values(const Graph& graph, const TaskGraph& tasks, const PlanInputs& plan,
                       int max_tags);

}  // namespace cleave
