// Pipelined stages as a task plan: a stage per device, each device its stage for every sample.
#include "frontend/stage_plan.h"

#include <fmt/core.h>
#include <fmt/format.h>

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
// The bisection on the slowest stage's seconds stops at this relative width: far below what a
// cost table can tell apart, and at most ~60 rounds of one pass over the nodes each.
constexpr double kCutTolerance = 1e-9;

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

// Each stage as full as `limit` allows on its device, leaving a node for every later stage:
// the nodes per stage when every stage stays within `limit`, else empty. Filling greedily is
// optimal for a fixed order of stages: moving a cut later only lightens the stages after it.
std::vector<int64_t> fill_stages(const TaskGraph& tasks, const std::vector<int>& devices,
                                 double limit) {
  const std::size_t nodes = tasks.tasks.size();
  const std::size_t stages = devices.size();
  std::vector<int64_t> counts;
  std::size_t p = 0;
  for (std::size_t k = 0; k < stages; ++k) {
    const bool last = k + 1 == stages;
    const std::size_t stop = last ? nodes : nodes - (stages - k - 1);
    const std::size_t begin = p;
    double seconds = 0;
    while (p < stop && seconds + tasks.tasks[p].time[devices[k]] <= limit) {
      seconds += tasks.tasks[p].time[devices[k]];
      ++p;
    }
    if (p == begin || (last && p < nodes)) return {};
    counts.push_back(static_cast<int64_t>(p - begin));
  }
  return counts;
}

std::string stage_configuration(int stages, const std::vector<int>& devices) {
  std::vector<int> first(devices.size());
  std::iota(first.begin(), first.end(), 0);
  if (devices == first) return fmt::format("{} stages, one per device", stages);
  return fmt::format("{} stages on devices {}", stages, fmt::join(devices, ", "));
}

// The device orders worth trying: the machine's, and fastest first where the speeds differ.
std::vector<std::vector<int>> device_orders(const Machine& machine) {
  std::vector<int> given(machine.size());
  std::iota(given.begin(), given.end(), 0);
  std::vector<int> fastest = given;
  std::stable_sort(fastest.begin(), fastest.end(), [&](int a, int b) {
    return machine.devices[a].speed > machine.devices[b].speed;
  });
  if (fastest == given) return {given};
  return {given, fastest};
}

}  // namespace

std::vector<int64_t> balanced_stage_nodes(const TaskGraph& per_sample,
                                          const std::vector<int>& devices) {
  double high = 0;
  for (int device : devices) {
    double total = 0;
    for (const Task& task : per_sample.tasks) total += task.time.at(device);
    high = std::max(high, total);
  }
  // Every stage within the slowest device's time for the whole graph is always a cut (the
  // slack: a stage's sum may round above the whole's).
  high *= 1 + kCutTolerance;
  std::vector<int64_t> best = fill_stages(per_sample, devices, high);
  if (best.empty()) {
    throw Error(fmt::format("pipeline: no cut of {} node(s) into {} stage(s)",
                            per_sample.tasks.size(), devices.size()));
  }
  double low = 0;
  while (high - low > kCutTolerance * high) {
    const double middle = 0.5 * (low + high);
    std::vector<int64_t> counts = fill_stages(per_sample, devices, middle);
    if (counts.empty()) {
      low = middle;
    } else {
      high = middle;
      best = std::move(counts);
    }
  }
  return best;
}

ModelPlan stage_plan(const Graph& graph, const CostTable& costs, const Machine& machine, int stages,
                     int samples, std::vector<int> devices) {
  const int most = std::min(static_cast<int>(machine.size()), static_cast<int>(graph.node_count()));
  if (stages < 2 || stages > most) {
    throw Error(fmt::format("pipeline: expected 2 to {} stages (the devices and nodes), got {}",
                            most, stages));
  }
  if (devices.empty()) {
    devices.resize(stages);
    std::iota(devices.begin(), devices.end(), 0);
  }
  if (devices.size() < static_cast<std::size_t>(stages)) {
    throw Error(fmt::format("pipeline: {} stages need {} stage devices, got {}", stages, stages,
                            devices.size()));
  }
  std::vector<bool> used(machine.size(), false);
  for (int device : devices) {
    if (device < 0 || static_cast<std::size_t>(device) >= machine.size() || used[device]) {
      throw Error(
          fmt::format("pipeline: stage devices {} name device {} twice or one of {} "
                      "devices the machine lacks",
                      fmt::join(devices, ", "), device, machine.size()));
    }
    used[device] = true;
  }
  devices.resize(stages);
  const TaskGraph per_sample = task_graph_for(graph, costs, machine, ModelValues::kFromRank0);
  const std::vector<int64_t> stage_nodes = balanced_stage_nodes(per_sample, devices);
  // Task p of the per-sample graph is node p of the topological order.
  std::vector<int> device_of_node(graph.node_capacity(), devices.front());
  std::vector<double> stage_seconds(stages, 0.0);
  std::size_t p = 0;
  for (int k = 0; k < stages; ++k) {
    for (int64_t n = 0; n < stage_nodes[k]; ++n, ++p) {
      device_of_node[per_sample.tasks[p].node] = devices[k];
      stage_seconds[k] += per_sample.tasks[p].time[devices[k]];
    }
  }

  ModelPlan result;
  result.family = "pipeline";
  result.configuration = stage_configuration(stages, devices);
  for (const Device& device : machine.devices)
    result.threads_per_worker = std::max(result.threads_per_worker, device.threads);
  result.tasks = samples > 1 ? replicate_for_samples(per_sample, samples) : per_sample;
  std::vector<int> worker_of_task;
  for (const Task& task : result.tasks.tasks) worker_of_task.push_back(device_of_node[task.node]);
  AppendScheduler scheduler(result.tasks, sample_major_order(graph, result.tasks));
  result.plan = scheduler.to_plan(worker_of_task, "pipeline");
  result.plan.batch = samples;
  result.plan.notes["stage_nodes"] = stage_nodes;
  result.plan.notes["stage_devices"] = devices;
  result.plan.notes["stage_seconds"] = stage_seconds;
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
  for (const std::vector<int>& order : device_orders(machine)) {
    for (int stages = 2; stages <= most; ++stages) {
      ModelPlan plan = stage_plan(graph, costs, machine, stages, samples, order);
      if (plan.plan.makespan < best_seconds) {
        best_seconds = plan.plan.makespan;
        best = std::move(plan);
      }
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
