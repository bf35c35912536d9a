// A rank's weights: the initializers its tasks read; the rest are dropped (or never read).
#include "distributed/rank_weights.h"

#include <algorithm>
#include <set>

namespace cleave {

std::vector<ValueId> initializers_of_worker(const Graph& graph, const TaskGraph& tasks,
                                            const Plan& plan, int worker) {
  std::set<ValueId> used;
  for (int task : plan.order.at(worker)) {
    for (ValueId input : graph.node(tasks.tasks[task].node).inputs) {
      if (input != kNoValue && graph.value(input).initializer) used.insert(input);
    }
  }
  if (worker == 0) {
    for (ValueId output : graph.outputs()) {
      if (graph.value(output).initializer) used.insert(output);
    }
  }
  return {used.begin(), used.end()};
}

double keep_weights_of(Graph& graph, const TaskGraph& tasks, const Plan& plan, int worker) {
  std::vector<ValueId> kept = initializers_of_worker(graph, tasks, plan, worker);
  double bytes = 0;
  for (ValueId id : graph.initializers()) {
    auto& data = *graph.value(id).initializer;
    if (std::binary_search(kept.begin(), kept.end(), id)) {
      if (data.bytes) bytes += static_cast<double>(data.bytes->size());
    } else {
      data.bytes.reset();
    }
  }
  return bytes;
}

}  // namespace cleave
