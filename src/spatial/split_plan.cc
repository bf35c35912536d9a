// Builds the Plan of a split from the machine of every partitioned node.
#include "spatial/split_plan.h"

#include <algorithm>
#include <vector>

#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "plan/cluster/hypercluster.h"
#include "plan/simulator.h"

namespace cleave {

namespace {

// Each machine's tasks in topological order, except that a task whose outputs another machine
// reads and whose inputs are all its own machine's (a halo cut, a part gathered) runs as soon
// as its inputs are made. In topological order a machine often reaches the join that waits
// for its neighbour's halo before the cut it sends the neighbour, so two neighbours exchanging
// one layer's halos waited for each other in turn, every layer (squeezenet1_0 on 2 ranks: each
// rank waited 5.6-5.9 ms of a 13 ms run, 0.8 ms with the cuts sent first;
// docs/results/distributed.md).
std::vector<std::vector<int>> sends_first(const TaskGraph& tasks, const std::vector<int>& worker,
                                          int workers) {
  const int n = static_cast<int>(tasks.tasks.size());
  std::vector<std::vector<int>> inputs(n);
  std::vector<bool> sends(n, false), receives(n, false);
  for (const auto& [from, to] : tasks.edges) {
    inputs[to].push_back(from);
    if (worker[from] != worker[to]) sends[from] = receives[to] = true;
  }
  std::vector<std::vector<int>> order(workers);
  for (int t = 0; t < n; ++t) {
    std::vector<int>& mine = order[worker[t]];
    std::size_t at = mine.size();
    if (sends[t] && !receives[t]) {
      // Right after its last input on this machine (the task indices are topological).
      at = 0;
      for (std::size_t k = mine.size(); k-- > 0;) {
        if (std::find(inputs[t].begin(), inputs[t].end(), mine[k]) != inputs[t].end()) {
          at = k + 1;
          break;
        }
      }
    }
    mine.insert(mine.begin() + static_cast<std::ptrdiff_t>(at), t);
  }
  return order;
}

}  // namespace

ModelPlan split_plan(const Graph& graph, const PartitionedGraph& split, const CostTable& costs,
                     const Machine& machine, int samples, ModelValues values) {
  if (static_cast<int>(machine.size()) != split.machines)
    throw Error("split plan: the machine has " + std::to_string(machine.size()) +
                " devices, the split " + std::to_string(split.machines) + " machines");
  ModelPlan result;
  const TaskGraph per_sample = task_graph_for(graph, costs, machine, values);
  const int n = static_cast<int>(per_sample.tasks.size());
  std::vector<int> worker(n);
  for (int t = 0; t < n; ++t) {
    const Node& node = graph.node(per_sample.tasks[t].node);
    auto id = split.graph.find_node(node.name);
    if (!id) throw Error("split plan: node '" + node.name + "' is not in the split");
    worker[t] = split.machine[*id];
  }
  // One sample keeps the task names a split folder's plan.json has always had.
  result.tasks = samples > 1 ? replicate_for_samples(per_sample, samples) : per_sample;
  result.threads_per_worker = machine.devices.front().threads;
  Plan& plan = result.plan;
  plan.strategy = "spatial-split";
  plan.batch = samples;
  plan.order.assign(split.machines, {});
  const std::vector<std::vector<int>> order = sends_first(per_sample, worker, split.machines);
  for (int s = 0; s < samples; ++s) {
    for (int t = 0; t < n; ++t) plan.tasks.push_back({s * n + t, worker[t], 0, 0});
    for (int w = 0; w < split.machines; ++w)
      for (int t : order[w]) plan.order[w].push_back(s * n + t);
  }
  apply_simulation(plan, simulate(plan, result.tasks));
  return result;
}

}  // namespace cleave
