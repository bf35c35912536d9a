// What `cleave schedule` reports about a plan: its timeline per device, and the lower bound.
#include "plan/schedule/schedule_report.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "plan/schedule/lower_bound.h"
#include "support/error.h"

namespace cleave {

namespace {

// Per device: tasks placed and weight bytes; the devices only simulated; the throughput.
struct DeviceLoad {
  std::vector<int> tasks_on;
  std::vector<double> weights;
  std::vector<std::string> simulated;
  double throughput = 0;
};

DeviceLoad device_load(const ScheduleSetup& setup, const TaskGraph& graph, const Plan& plan,
                       const Simulation& simulation) {
  DeviceLoad load;
  std::vector<int> worker_of_task;
  load.tasks_on.assign(graph.machine.size(), 0);
  for (const PlannedTask& placed : plan.tasks) {
    worker_of_task.push_back(placed.worker);
    ++load.tasks_on[placed.worker];
  }
  load.weights = weight_bytes_per_worker(graph, worker_of_task);
  // Devices this host does not have (a machine file's "simulated": true): the plan's times for
  // them are the cost model's predictions, and nothing here can run it.
  for (const Device& device : graph.machine.devices) {
    if (device.simulated) load.simulated.push_back(device.name);
  }
  load.throughput = simulation.makespan > 0 ? static_cast<double>(setup.batch) / simulation.makespan
                                            : std::numeric_limits<double>::infinity();
  return load;
}

}  // namespace

std::string known_algorithms() {
  std::string names;
  for (const SchedulerEntry& entry : schedulers()) names += entry.name + ", ";
  if (lower_bound_function()) names += std::string(kLowerBoundAlgo) + ", ";
  return names.substr(0, names.size() - 2);
}

ScheduleBound compute_schedule_bound(const TaskGraph& graph, const ScheduleOptions& options) {
  const std::optional<LowerBound> bound = lower_bound_function();
  if (!bound) return {std::nullopt, "no lower bound is built in"};
  try {
    const LowerBoundResult result = (*bound)(graph, options);
    return {result.makespan, {}, result.timed_out};
  } catch (const Error& e) {
    return {std::nullopt, e.what()};
  }
}

nlohmann::json lower_bound_json(const ScheduleSetup& setup, const ScheduleBound& bound) {
  nlohmann::json json = {
      {"task_graph", setup.task_graph},        {"algorithm", kLowerBoundAlgo},
      {"objective", setup.objective},          {"batch", setup.batch},
      {"lower_bound_seconds", *bound.seconds}, {"lower_bound_timed_out", bound.timed_out}};
  if (setup.objective == "throughput" && *bound.seconds > 0) {
    json["throughput_upper_bound"] = static_cast<double>(setup.batch) / *bound.seconds;
  }
  return json;
}

std::string lower_bound_text(const ScheduleSetup& setup, const TaskGraph& graph,
                             const ScheduleBound& bound) {
  std::string out = fmt::format("task graph:   {} ({} tasks, {} devices)\n", setup.task_graph,
                                graph.tasks.size(), graph.machine.size());
  out += fmt::format("lower bound:  {:.4f} ms makespan{}\n", *bound.seconds * 1e3,
                     bound.timed_out ? " (best found within --time-limit)" : "");
  if (setup.objective == "throughput" && *bound.seconds > 0) {
    out += fmt::format("throughput:   at most {:.2f} samples/s\n",
                       static_cast<double>(setup.batch) / *bound.seconds);
  }
  return out;
}

nlohmann::json schedule_json(const ScheduleSetup& setup, const TaskGraph& graph, const Plan& plan,
                             const Simulation& simulation, const ScheduleBound& bound) {
  const DeviceLoad load = device_load(setup, graph, plan, simulation);
  nlohmann::json devices = nlohmann::json::array();
  for (std::size_t worker = 0; worker < graph.machine.size(); ++worker) {
    devices.push_back(
        {{"name", graph.machine.devices[worker].name},
         {"kind", graph.machine.devices[worker].kind},
         {"tasks", load.tasks_on[worker]},
         {"busy_seconds", simulation.busy[worker]},
         {"idle_seconds", simulation.idle[worker]},
         {"utilization",
          simulation.makespan > 0 ? simulation.busy[worker] / simulation.makespan : 0.0},
         {"weight_bytes", load.weights[worker]},
         {"simulated", graph.machine.devices[worker].simulated}});
  }
  nlohmann::json json = {
      {"task_graph", setup.task_graph},
      {"algorithm", setup.algo},
      {"objective", plan.objective},
      {"batch", setup.batch},
      {"tasks", graph.tasks.size()},
      {"makespan_seconds", simulation.makespan},
      {"throughput",
       std::isfinite(load.throughput) ? nlohmann::json(load.throughput) : nlohmann::json(nullptr)},
      {"solve_seconds", plan.notes.value("solve_seconds", 0.0)},
      {"transfers", simulation.transfer_count},
      {"transfer_bytes", simulation.transfer_bytes},
      {"devices", devices},
      {"simulated_devices", load.simulated},
      {"notes", plan.notes}};
  json["lower_bound_seconds"] = bound.seconds ? nlohmann::json(*bound.seconds) : nullptr;
  json["lower_bound_timed_out"] = bound.timed_out;
  if (!setup.plan_path.empty()) json["plan_file"] = setup.plan_path;
  if (!setup.gantt_path.empty()) json["gantt_file"] = setup.gantt_path;
  return json;
}

std::string schedule_text(const ScheduleSetup& setup, const TaskGraph& graph, const Plan& plan,
                          const Simulation& simulation, const ScheduleBound& bound) {
  const DeviceLoad load = device_load(setup, graph, plan, simulation);
  std::string out = fmt::format(
      "task graph:   {} ({} tasks, {} edges, {} devices{})\n", setup.task_graph, graph.tasks.size(),
      graph.edges.size(), graph.machine.size(),
      setup.batched
          ? fmt::format(", batch {} in {} slices", setup.batch,
                        graph.tasks.size() / std::max<std::size_t>(setup.per_sample_tasks, 1))
          : "");
  out += fmt::format("algorithm:    {}\n", setup.algo);
  if (plan.notes.contains("coarse_tasks")) {
    out += fmt::format("coarsened:    planned on {} chains of the {} tasks\n",
                       plan.notes["coarse_tasks"].get<std::size_t>(), graph.tasks.size());
  }
  if (plan.objective == "throughput") {
    out += fmt::format("throughput:   {:.2f} samples/s (batch {} in {:.4f} ms)\n", load.throughput,
                       setup.batch, simulation.makespan * 1e3);
  } else {
    out += fmt::format("makespan:     {:.4f} ms\n", simulation.makespan * 1e3);
  }
  out += fmt::format("solve time:   {:.3f} s\n", plan.notes.value("solve_seconds", 0.0));
  if (plan.notes.value("time_limit_reached", false)) {
    out += fmt::format(
        "time limit:   reached; the last {} tasks went to a producer's or their fastest "
        "device without a search\n",
        plan.notes.value("fallback_tasks", 0));
  }
  if (bound.seconds) {
    const double gap =
        *bound.seconds > 0 ? 100.0 * (simulation.makespan - *bound.seconds) / *bound.seconds : 0.0;
    out += fmt::format("lower bound:  {:.4f} ms (gap {:.1f}%){}\n", *bound.seconds * 1e3, gap,
                       bound.timed_out ? ", the best found within --time-limit" : "");
  } else {
    out += fmt::format("lower bound:  none ({})\n", bound.problem);
  }
  out += fmt::format("transfers:    {} ({:.0f} bytes)\n", simulation.transfer_count,
                     simulation.transfer_bytes);
  if (!load.simulated.empty()) {
    out += fmt::format(
        "simulated:    {} {} not on this machine: the times are the cost model's "
        "predictions, not measurements\n",
        fmt::format("{}", fmt::join(load.simulated, ", ")),
        load.simulated.size() == 1 ? "is" : "are");
  }
  out += fmt::format("\n{:<16} {:<10} {:>6} {:>12} {:>12} {:>6} {:>12}\n", "device", "kind",
                     "tasks", "busy ms", "idle ms", "busy%", "weights MB");
  for (std::size_t worker = 0; worker < graph.machine.size(); ++worker) {
    out += fmt::format(
        "{:<16} {:<10} {:>6} {:>12.4f} {:>12.4f} {:>6.1f} {:>12.3f}\n",
        graph.machine.devices[worker].name, graph.machine.devices[worker].kind,
        load.tasks_on[worker], simulation.busy[worker] * 1e3, simulation.idle[worker] * 1e3,
        simulation.makespan > 0 ? 100.0 * simulation.busy[worker] / simulation.makespan : 0.0,
        load.weights[worker] / 1e6);
  }
  if (!setup.plan_path.empty()) out += fmt::format("\nplan written to {}\n", setup.plan_path);
  if (!setup.gantt_path.empty())
    out += fmt::format("gantt chart written to {}\n", setup.gantt_path);
  return out;
}

}  // namespace cleave
