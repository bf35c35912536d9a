// Builds the Plan of a split from the machine of every partitioned node.
#include "spatial/split_plan.h"

#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "plan/cluster/hypercluster.h"
#include "plan/simulator.h"

namespace cleave {

ModelPlan split_plan(const Graph& graph, const PartitionedGraph& split, const CostTable& costs,
                     const Machine& machine, int samples, ModelValues values) {
  if (static_cast<int>(machine.size()) != split.machines)
    throw Error("split plan: the machine has " + std::to_string(machine.size()) +
                " devices, the split " + std::to_string(split.machines) + " machines");
  ModelPlan result;
  result.tasks = task_graph_for(graph, costs, machine, values);
  // One sample keeps the task names a split folder's plan.json has always had.
  if (samples > 1) result.tasks = replicate_for_samples(result.tasks, samples);
  result.threads_per_worker = machine.devices.front().threads;
  Plan& plan = result.plan;
  plan.strategy = "spatial-split";
  plan.batch = samples;
  plan.order.assign(split.machines, {});
  for (std::size_t t = 0; t < result.tasks.tasks.size(); ++t) {
    const Node& node = graph.node(result.tasks.tasks[t].node);
    auto id = split.graph.find_node(node.name);
    if (!id) throw Error("split plan: node '" + node.name + "' is not in the split");
    const int worker = split.machine[*id];
    plan.tasks.push_back({static_cast<int>(t), worker, 0, 0});
    plan.order[worker].push_back(static_cast<int>(t));
  }
  apply_simulation(plan, simulate(plan, result.tasks));
  return result;
}

}  // namespace cleave
