// In-place Concat planned over the tasks one executor (a process, or one rank) runs.
#include "runtime/task_concat_placement.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace cleave {

ConcatPlacement place_concat_inputs_of_tasks(
    const Graph& graph, const TaskLoop& loop, std::span<const int> tasks, int samples,
    const std::function<const OutputSpec*(ValueId)>& received) {
  std::map<std::pair<NodeId, int>, int> copies;
  std::vector<int> task_of_node(graph.node_capacity(), -1);
  for (int t : tasks) {
    ++copies[{loop.tasks[t].node, loop.tasks[t].sample}];
    task_of_node[loop.tasks[t].node] = t;
  }
  const auto made_here = [&](const Value& v) {
    return v.producer >= 0 && task_of_node[v.producer] >= 0;
  };
  const auto spec_of = [&](ValueId value) -> const OutputSpec* {
    const Value& v = graph.value(value);
    if (v.producer < 0 || v.initializer) return nullptr;
    if (!made_here(v)) return received ? received(value) : nullptr;
    for (int sample = 0; sample < samples; ++sample) {
      if (copies[{v.producer, sample}] != 1) return nullptr;
    }
    const std::vector<OutputSpec>& specs = loop.tasks[task_of_node[v.producer]].runner->specs();
    const auto& outputs = graph.node(v.producer).outputs;
    const auto index = static_cast<std::size_t>(std::find(outputs.begin(), outputs.end(), value) -
                                                outputs.begin());
    return index < specs.size() ? &specs[index] : nullptr;
  };
  return place_concat_inputs(graph, spec_of, [&](const Node& concat, ValueId value) {
    if (value == concat.outputs[0] || made_here(graph.value(value)))
      return made_here(graph.value(concat.outputs[0]));
    return concat_inputs_received_in_place(graph, concat);
  });
}

}  // namespace cleave
