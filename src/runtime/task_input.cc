// Classifying a node's input for the task loop; needs only the graph, not the planner, so
// that the generated programs (which link the runtime without it) can use it.
#include "runtime/task_input.h"

namespace cleave {

TaskInput classify_input(const Graph& graph, ValueId value) {
  TaskInput source;
  source.value = value;
  if (value == kNoValue) {
    source.kind = TaskInput::Kind::kNone;
  } else if (graph.value(value).initializer) {
    source.kind = TaskInput::Kind::kConstant;
  } else if (graph.value(value).producer < 0) {
    source.kind = TaskInput::Kind::kGraphInput;
  } else {
    source.kind = TaskInput::Kind::kTask;
  }
  return source;
}

}  // namespace cleave
