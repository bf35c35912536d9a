// Cost sources, and the task graphs and plans made from them (costs.h).
#include "frontend/costs.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <vector>

#include "cost/hand_off_calibration.h"
#include "frontend/layout_choice.h"
#include "runtime/concat_placement.h"
#include "runtime/pinning.h"
#include "support/cpu_quota.h"

namespace cleave {

namespace {

// A value's bytes where its type and shape are static (the MPI executor sends only those).
double static_bytes(const Value& value) {
  if (!value.shape.rank_known || !value.shape.is_static()) return 0;
  return static_cast<double>(value.shape.element_count()) *
         static_cast<double>(element_size(value.dtype));
}

// The model inputs `node` reads (each once) and the model outputs it produces.
void add_model_values(const Graph& graph, const Node& node, Task& task) {
  for (ValueId id : node.inputs) {
    if (id == kNoValue) continue;
    const Value& value = graph.value(id);
    if (value.initializer || value.producer >= 0) continue;
    const ModelValue input{value.name, static_bytes(value)};
    if (std::find(task.model_inputs.begin(), task.model_inputs.end(), input) ==
        task.model_inputs.end())
      task.model_inputs.push_back(input);
  }
  for (ValueId id : graph.outputs()) {
    const Value& value = graph.value(id);
    if (std::find(node.outputs.begin(), node.outputs.end(), id) != node.outputs.end())
      task.model_outputs.push_back({value.name, static_bytes(value)});
  }
}

// Where node times are measured, so are the hand-offs between workers (cached like the rates);
// a host that cannot be calibrated keeps the assumed links and says so.
HostLinks calibrated_links_or_assumed(const std::function<void(const std::string&)>& progress) {
  // On one core no two workers ever compute at once: nothing to calibrate, and nothing to say.
  if (allowed_cpus().size() < 2) return {};
  try {
    return calibrated_host_links();
  } catch (const Error& e) {
    const std::string line =
        fmt::format("host hand-off not calibrated, links assumed: {}", e.what());
    if (progress) {
      progress(line);
    } else {
      fmt::print(stderr, "cleave: warning: {}\n", line);
    }
  }
  return {};
}

}  // namespace

CostTable choose_costs(const Graph& graph, const CostChoice& choice) {
  if (choice.source == "static") return static_costs(graph);
  if (choice.source == "analytical") {
    return analytical_costs(graph, measure_peak_rates(choice.max_threads));
  }
  if (choice.source != "profile") {
    throw Error(
        fmt::format("--costs: expected profile, static or analytical, got \"{}\"", choice.source));
  }
  const HostLinks links = calibrated_links_or_assumed(choice.progress);
  ProfileOptions options = profile_options(choice.max_threads);
  options.repeat = choice.repeat;
  options.use_cache = choice.use_cache;
  if (!choice.level_check) options.level.when = LevelCheck::kOff;
  options.progress = choice.progress;
  options.convolution_family =
      choice.family ? *choice.family
                    : measured_family(graph, choice.threads_per_worker, options.progress);
  CostTable table = profile_costs(graph, options);
  if (options.blocked_layouts) table.convolution_family = options.convolution_family;
  table.host_links = links;
  return table;
}

int profile_threads_for(const Machine& machine) {
  int threads = 1;
  for (const Device& device : machine.devices) threads = std::max(threads, device.threads);
  return std::min(threads, usable_cores());
}

TaskGraph task_graph_for(const Graph& graph, const CostTable& costs, const Machine& machine,
                         ModelValues values) {
  TaskGraph tasks;
  tasks.machine = machine;
  std::vector<int> task_of(graph.node_capacity(), -1);
  std::set<std::string> names;
  const bool busy = costs.has_busy_seconds();
  for (NodeId id : graph.topological_order()) {
    Task task;
    const Node& node = graph.node(id);
    task.name = node.name.empty() ? fmt::format("{}_{}", node.op_type, id) : node.name;
    // Task names key the task-graph file; ONNX node names need not be unique.
    if (!names.insert(task.name).second) {
      task.name = fmt::format("{}#{}", task.name, id);
      names.insert(task.name);
    }
    task.node = id;
    for (const Device& device : machine.devices) {
      if (costs.source == "analytical" && device.roofline.declared()) {
        const NodeCost& cost = costs.nodes[id];
        const Roofline& roofline = device.roofline;
        task.time.push_back(roofline.seconds_per_op +
                            std::max(cost.flops / roofline.flops_per_second,
                                     bytes_moved(graph, id, cost) / roofline.bytes_per_second));
      } else {
        task.time.push_back(costs.seconds(id, device.threads) / device.speed);
        if (busy) task.busy_time.push_back(costs.busy_seconds(id, device.threads) / device.speed);
      }
    }
    // A device priced by its roofline has no busy-neighbour time: none for the task then.
    if (task.busy_time.size() != task.time.size()) task.busy_time.clear();
    task.output_bytes = costs.nodes[id].output_bytes;
    task.weight_bytes = costs.nodes[id].weight_bytes;
    if (values == ModelValues::kFromRank0) {
      add_model_values(graph, node, task);
      // The MPI executor receives some Concats' inputs in place; the others it copies.
      task.copies_remote_inputs =
          node.op_type == "Concat" && !concat_inputs_received_in_place(graph, node);
    }
    task_of[id] = static_cast<int>(tasks.tasks.size());
    tasks.tasks.push_back(std::move(task));
  }
  for (NodeId id : graph.node_ids()) {
    for (NodeId next : graph.successors(id)) tasks.edges.emplace_back(task_of[id], task_of[next]);
  }
  return tasks;
}

TaskGraph model_task_graph(const Graph& graph, const Machine& machine, const std::string& source,
                           const std::function<void(const std::string&)>& progress,
                           const std::string& origin) {
  CostChoice choice;
  choice.source = source;
  choice.max_threads = profile_threads_for(machine);
  choice.progress = progress;
  TaskGraph tasks =
      task_graph_for(graph, choose_costs(graph, choice), machine, ModelValues::kFromRank0);
  tasks.check(origin);
  return tasks;
}

int cost_threads_for(const ModelPlanOptions& options) {
  return options.machine ? profile_threads_for(*options.machine)
                         : options.workers * options.threads_per_worker;
}

CostTable plan_costs(const Graph& graph, const std::string& source, const ModelPlanOptions& options,
                     const std::function<void(const std::string&)>& progress) {
  CostChoice choice;
  choice.source = source;
  choice.max_threads = cost_threads_for(options);
  choice.threads_per_worker = options.threads_per_worker;
  choice.progress = progress;
  return choose_costs(graph, choice);
}

CostedPlan plan_with_costs(const Graph& graph, const std::string& source,
                           const ModelPlanOptions& options,
                           const std::function<void(const std::string&)>& progress) {
  CostedPlan result{plan_costs(graph, source, options, progress), {}};
  result.plan = plan_model(graph, result.costs, options);
  return result;
}

}  // namespace cleave
