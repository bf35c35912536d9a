// What a node's input is to the task that reads it; the one decision every executor shares.
#pragma once

#include "ir/graph.h"

namespace cleave {

/// One input of a task: absent, an initializer, a graph input of the task's sample, or an
/// output of another task.
struct TaskInput {
  enum class Kind { kNone, kConstant, kGraphInput, kTask } kind = Kind::kNone;
  ValueId value = kNoValue;
  int task = -1;    ///< kTask: the producer task.
  int output = -1;  ///< kTask: the index among its node's outputs.
};

/// The kind of `value` as a node input, with `value` set: kNone for kNoValue, kConstant for an
/// initializer, kGraphInput for a value no node produces, else kTask. `task` and `output` are
/// left for the caller, which knows which task runs the producer.
TaskInput classify_input(const Graph& graph, ValueId value);

}  // namespace cleave
