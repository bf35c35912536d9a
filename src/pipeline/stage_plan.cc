// Pipelined stages as a task plan: a stage per device, each device its stage for every sample.
#include "pipeline/stage_plan.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include "frontend/costs.h"
#include "plan/cluster/hypercluster.h"
#include "plan/list_schedule.h"
#include "plan/plan.h"
#include "support/error.h"

namespace cleave {

namespace {

// Stages beyond this many cut a model into slivers whose hand-offs dominate (as the candidate
// table's pipeline row).
constexpr int kMostStages = 16;

// Sample by sample, each sample's tasks in the graph's topological order: each device then
// finishes a sample's stage before it starts the next sample's, which is what pipelines.
std::vector<int> sample_major_order(const Graph& graph, const TaskGraph& tasks) {
  std::vector<int> position(graph.node_capacity(), 0);
  const std::vector<NodeId> order = graph.topological_order();
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::vector<int> priority(tasks.tasks.size());
  std::iota(priority.begin(), priority.end(), 0);
  std::stable_sort(priority.begin(), priority.end(), [&](int a, int b) {
    const Task& x = tasks.tasks[a];
    const Task& y = tasks.tasks[b];
    if (x.batch_begin != y.batch_begin) return x.batch_begin < y.batch_begin;
    return position[x.node] < position[y.node];
  });
  return priority;
}

}  // namespace

StagedStream stage_cut(const Graph& graph, const CostTable& costs, int stages, int threads) {
  std::vector<double> node_cost(graph.node_capacity(), 0);
  for (NodeId id : graph.node_ids()) node_cost[id] = costs.seconds(id, threads);
  return graph_to_stages(graph, stages, "model", node_cost);
}

std::vector<int> stage_of_nodes(const Graph& graph, const StagedStream& staged) {
  std::vector<int> stage_of_node(graph.node_capacity(), 0);
  const std::vector<NodeId> order = graph.topological_order();
  std::size_t position = 0;
  for (std::size_t stage = 0; stage < staged.stage_nodes.size(); ++stage) {
    for (int64_t n = 0; n < staged.stage_nodes[stage] && position < order.size(); ++n)
      stage_of_node[order[position++]] = static_cast<int>(stage);
  }
  return stage_of_node;
}

ModelPlan stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine, int stages,
                     int samples) {
  const int most = std::min(static_cast<int>(machine.size()), static_cast<int>(graph.node_count()));
  if (stages < 2 || stages > most) {
    throw Error(fmt::format("pipeline: expected 2 to {} stages (the devices and nodes), got {}",
                            most, stages));
  }
  const int threads = machine.devices.front().threads;
  const StagedStream staged = stage_cut(graph, costs, stages, threads);
  const std::vector<int> stage_of_node = stage_of_nodes(graph, staged);

  ModelPlan result;
  result.family = "pipeline";
  result.configuration = fmt::format("{} stages, one per device", stages);
  result.threads_per_worker = threads;
  const TaskGraph per_sample = task_graph_for(graph, costs, machine, ModelValues::kFromRank0);
  result.tasks = samples > 1 ? replicate_for_samples(per_sample, samples) : per_sample;
  std::vector<int> worker_of_task;
  for (const Task& task : result.tasks.tasks) worker_of_task.push_back(stage_of_node[task.node]);
  AppendScheduler scheduler(result.tasks, sample_major_order(graph, result.tasks));
  result.plan = scheduler.to_plan(worker_of_task, "pipeline");
  result.plan.batch = samples;
  result.plan.notes["stage_nodes"] = staged.stage_nodes;
  return result;
}

ModelPlan best_stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine,
                          int samples) {
  const int most = std::min(
      {static_cast<int>(machine.size()), static_cast<int>(graph.node_count()), kMostStages});
  if (most < 2) {
    throw Error(
        fmt::format("pipeline: needs a machine of two devices or more and a model of two "
                    "nodes or more, got {} device(s) and {} node(s)",
                    machine.size(), graph.node_count()));
  }
  ModelPlan best;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (int stages = 2; stages <= most; ++stages) {
    ModelPlan plan = stage_plan(graph, costs, machine, stages, samples);
    if (plan.plan.makespan < best_seconds) {
      best_seconds = plan.plan.makespan;
      best = std::move(plan);
    }
  }
  return best;
}

CostedPlan plan_stages_with_costs(const Graph& graph, const std::string& source,
                                  const ModelPlanOptions& options,
                                  const std::function<void(const std::string&)>& progress) {
  if (!options.machine) {
    throw Error(
        "strategy pipeline with a plan file is stages on a machine file's devices: give "
        "--machine FILE (on this host's threads `cleave run --plan pipeline` runs stages)");
  }
  const auto start = std::chrono::steady_clock::now();
  CostedPlan result{plan_costs(graph, source, options, progress), {}};
  ModelPlan& plan = result.plan;
  plan = best_stage_plan(graph, result.costs, *options.machine, options.samples);
  validate_plan(plan.plan, plan.tasks);
  plan.convolution_family = result.costs.convolution_family;
  plan.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  plan.plan.notes["planning_seconds"] = plan.planning_seconds;
  plan.plan.notes["cost_source"] = result.costs.source;
  return result;
}

}  // namespace cleave
