// `cleave schedule`: plan a task graph (or a model on a machine) with one of the planners and
// report the predicted timeline.
#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"
#include "support/atomic_output.h"
#include "viz/gantt.h"

namespace cleave::cli {

namespace {

constexpr const char* kLowerBoundAlgo = "lower-bound";

struct ScheduleCommandOptions {
  std::string task_graph;  // the input file: a task graph, or a model when `machine` is set
  std::string machine;
  std::string costs = "profile";
  ModelSettings model;
  std::string algo = "heft";
  std::string objective = "latency";
  int64_t batch = 1;
  std::vector<int64_t> slices;
  double time_limit = 10;
  double gap = 1e-6;
  uint64_t seed = 1;
  int64_t iterations = 200000;
  std::string symmetry = "none";
  int channels = 0;
  int solver_processes = 0;
  int solver_threads = 1;
  bool coarsen = false;
  bool skip_bound = false;
  std::string plan_path;
  std::string gantt_path;
  bool json = false;
};

struct Bound {
  std::optional<double> seconds;
  std::string problem;     // why there is none
  bool timed_out = false;  // the best bound found within --time-limit
};

Bound compute_bound(const TaskGraph& graph, const ScheduleOptions& options) {
  const std::optional<LowerBound> bound = lower_bound_function();
  if (!bound) return {std::nullopt, "no lower bound is built in"};
  try {
    const LowerBoundResult result = (*bound)(graph, options);
    return {result.makespan, {}, result.timed_out};
  } catch (const Error& e) {
    return {std::nullopt, e.what()};
  }
}

std::string known_algorithms() {
  std::string names;
  for (const SchedulerEntry& entry : schedulers()) names += entry.name + ", ";
  if (lower_bound_function()) names += std::string(kLowerBoundAlgo) + ", ";
  return names.substr(0, names.size() - 2);
}

int run_lower_bound_only(const ScheduleCommandOptions& command, const TaskGraph& graph,
                         const ScheduleOptions& options) {
  if (!lower_bound_function()) {
    throw Error(fmt::format("schedule: unknown algorithm \"{}\" (known: {})", kLowerBoundAlgo,
                            known_algorithms()));
  }
  const Bound bound = compute_bound(graph, options);
  if (!bound.seconds) throw Error(fmt::format("schedule: lower bound failed: {}", bound.problem));
  if (command.json) {
    nlohmann::json json = {
        {"task_graph", command.task_graph},      {"algorithm", kLowerBoundAlgo},
        {"objective", command.objective},        {"batch", command.batch},
        {"lower_bound_seconds", *bound.seconds}, {"lower_bound_timed_out", bound.timed_out}};
    if (command.objective == "throughput" && *bound.seconds > 0) {
      json["throughput_upper_bound"] = static_cast<double>(command.batch) / *bound.seconds;
    }
    fmt::print("{}\n", json.dump(2));
  } else {
    fmt::print("task graph:   {} ({} tasks, {} devices)\n", command.task_graph, graph.tasks.size(),
               graph.machine.size());
    fmt::print("lower bound:  {:.4f} ms makespan{}\n", *bound.seconds * 1e3,
               bound.timed_out ? " (best found within --time-limit)" : "");
    if (command.objective == "throughput" && *bound.seconds > 0) {
      fmt::print("throughput:   at most {:.2f} samples/s\n",
                 static_cast<double>(command.batch) / *bound.seconds);
    }
  }
  return 0;
}

TaskGraph read_input(const ScheduleCommandOptions& command) {
  if (!command.machine.empty()) {
    ModelSettings model = command.model;
    model.model = command.task_graph;
    return model_task_graph(model, command.machine, command.costs);
  }
  if (command.task_graph.size() >= 5 &&
      command.task_graph.compare(command.task_graph.size() - 5, 5, ".onnx") == 0) {
    throw Error(fmt::format("{}: a model needs --machine m.json (or give a task-graph JSON file)",
                            command.task_graph));
  }
  return read_task_graph(command.task_graph);
}

int run_schedule(const ScheduleCommandOptions& command) {
  // Bad targets are refused before the search, which may take --time-limit.
  if (!command.plan_path.empty()) require_file_target(command.plan_path);
  if (!command.gantt_path.empty()) require_file_target(command.gantt_path);
  const TaskGraph per_sample = read_input(command);
  if (command.batch < 1) {
    throw Error(fmt::format("schedule: --batch must be at least 1, got {}", command.batch));
  }
  const bool batched = command.batch > 1 || !command.slices.empty();
  const TaskGraph graph =
      batched ? batch_task_graph(
                    per_sample, command.batch,
                    command.slices.empty() ? default_slice_sizes(command.batch) : command.slices)
              : per_sample;

  ScheduleOptions options;
  options.objective = command.objective;
  options.batch = command.batch;
  options.time_limit_seconds = command.time_limit;
  options.relative_gap = command.gap;
  options.seed = command.seed;
  options.max_iterations = command.iterations;
  options.symmetry = command.symmetry;
  options.channels = command.channels;
  options.coarsen = command.coarsen;
  options.solver_processes = command.solver_processes;
  options.solver_threads = command.solver_threads;
  if (command.algo == kLowerBoundAlgo) return run_lower_bound_only(command, graph, options);
  bool known = false;
  for (const SchedulerEntry& entry : schedulers()) known = known || entry.name == command.algo;
  if (!known) {
    throw Error(fmt::format("schedule: unknown algorithm \"{}\" (known: {})", command.algo,
                            known_algorithms()));
  }

  Plan plan = schedule(graph, command.algo, options);
  validate_plan(plan, graph);
  const Simulation simulation = simulate(plan, graph);
  const double solve_seconds = plan.notes.value("solve_seconds", 0.0);
  const Bound bound = command.skip_bound ? Bound{std::nullopt, "skipped (--no-bound)"}
                                         : compute_bound(graph, options);
  if (bound.seconds) {
    plan.notes["lower_bound"] = *bound.seconds;
    if (*bound.seconds > 0) {
      plan.notes["gap_to_lower_bound"] = (simulation.makespan - *bound.seconds) / *bound.seconds;
    }
  }
  if (!command.plan_path.empty()) write_plan(plan, graph, command.plan_path);
  if (!command.gantt_path.empty()) {
    write_gantt_svg(command.gantt_path, plan, graph, simulation,
                    fmt::format("{}: {} ({})", command.task_graph, command.algo, plan.objective));
  }

  std::vector<int> worker_of_task;
  std::vector<int> tasks_on(graph.machine.size(), 0);
  for (const PlannedTask& placed : plan.tasks) {
    worker_of_task.push_back(placed.worker);
    ++tasks_on[placed.worker];
  }
  const std::vector<double> weights = weight_bytes_per_worker(graph, worker_of_task);
  // Devices this host does not have (a machine file's "simulated": true): the plan's times for
  // them are the cost model's predictions, and nothing here can run it.
  std::vector<std::string> simulated;
  for (const Device& device : graph.machine.devices) {
    if (device.simulated) simulated.push_back(device.name);
  }
  const double throughput = simulation.makespan > 0
                                ? static_cast<double>(command.batch) / simulation.makespan
                                : std::numeric_limits<double>::infinity();

  if (command.json) {
    nlohmann::json devices = nlohmann::json::array();
    for (std::size_t worker = 0; worker < graph.machine.size(); ++worker) {
      devices.push_back(
          {{"name", graph.machine.devices[worker].name},
           {"kind", graph.machine.devices[worker].kind},
           {"tasks", tasks_on[worker]},
           {"busy_seconds", simulation.busy[worker]},
           {"idle_seconds", simulation.idle[worker]},
           {"utilization",
            simulation.makespan > 0 ? simulation.busy[worker] / simulation.makespan : 0.0},
           {"weight_bytes", weights[worker]},
           {"simulated", graph.machine.devices[worker].simulated}});
    }
    nlohmann::json json = {{"task_graph", command.task_graph},
                           {"algorithm", command.algo},
                           {"objective", plan.objective},
                           {"batch", command.batch},
                           {"tasks", graph.tasks.size()},
                           {"makespan_seconds", simulation.makespan},
                           {"throughput", std::isfinite(throughput) ? nlohmann::json(throughput)
                                                                    : nlohmann::json(nullptr)},
                           {"solve_seconds", solve_seconds},
                           {"transfers", simulation.transfer_count},
                           {"transfer_bytes", simulation.transfer_bytes},
                           {"devices", devices},
                           {"simulated_devices", simulated},
                           {"notes", plan.notes}};
    json["lower_bound_seconds"] = bound.seconds ? nlohmann::json(*bound.seconds) : nullptr;
    json["lower_bound_timed_out"] = bound.timed_out;
    if (!command.plan_path.empty()) json["plan_file"] = command.plan_path;
    if (!command.gantt_path.empty()) json["gantt_file"] = command.gantt_path;
    fmt::print("{}\n", json.dump(2));
    return 0;
  }

  fmt::print(
      "task graph:   {} ({} tasks, {} edges, {} devices{})\n", command.task_graph,
      graph.tasks.size(), graph.edges.size(), graph.machine.size(),
      batched ? fmt::format(", batch {} in {} slices", command.batch,
                            graph.tasks.size() / std::max<std::size_t>(per_sample.tasks.size(), 1))
              : "");
  fmt::print("algorithm:    {}\n", command.algo);
  if (plan.notes.contains("coarse_tasks")) {
    fmt::print("coarsened:    planned on {} chains of the {} tasks\n",
               plan.notes["coarse_tasks"].get<std::size_t>(), graph.tasks.size());
  }
  if (plan.objective == "throughput") {
    fmt::print("throughput:   {:.2f} samples/s (batch {} in {:.4f} ms)\n", throughput,
               command.batch, simulation.makespan * 1e3);
  } else {
    fmt::print("makespan:     {:.4f} ms\n", simulation.makespan * 1e3);
  }
  fmt::print("solve time:   {:.3f} s\n", solve_seconds);
  if (plan.notes.value("time_limit_reached", false)) {
    fmt::print(
        "time limit:   reached; the last {} tasks went to a producer's or their fastest "
        "device without a search\n",
        plan.notes.value("fallback_tasks", 0));
  }
  if (bound.seconds) {
    const double gap =
        *bound.seconds > 0 ? 100.0 * (simulation.makespan - *bound.seconds) / *bound.seconds : 0.0;
    fmt::print("lower bound:  {:.4f} ms (gap {:.1f}%){}\n", *bound.seconds * 1e3, gap,
               bound.timed_out ? ", the best found within --time-limit" : "");
  } else {
    fmt::print("lower bound:  none ({})\n", bound.problem);
  }
  fmt::print("transfers:    {} ({:.0f} bytes)\n", simulation.transfer_count,
             simulation.transfer_bytes);
  if (!simulated.empty()) {
    fmt::print(
        "simulated:    {} {} not on this machine: the times are the cost model's "
        "predictions, not measurements\n",
        fmt::format("{}", fmt::join(simulated, ", ")), simulated.size() == 1 ? "is" : "are");
  }
  fmt::print("\n{:<16} {:<10} {:>6} {:>12} {:>12} {:>6} {:>12}\n", "device", "kind", "tasks",
             "busy ms", "idle ms", "busy%", "weights MB");
  for (std::size_t worker = 0; worker < graph.machine.size(); ++worker) {
    fmt::print(
        "{:<16} {:<10} {:>6} {:>12.4f} {:>12.4f} {:>6.1f} {:>12.3f}\n",
        graph.machine.devices[worker].name, graph.machine.devices[worker].kind, tasks_on[worker],
        simulation.busy[worker] * 1e3, simulation.idle[worker] * 1e3,
        simulation.makespan > 0 ? 100.0 * simulation.busy[worker] / simulation.makespan : 0.0,
        weights[worker] / 1e6);
  }
  if (!command.plan_path.empty()) fmt::print("\nplan written to {}\n", command.plan_path);
  if (!command.gantt_path.empty()) fmt::print("gantt chart written to {}\n", command.gantt_path);
  return 0;
}

}  // namespace

void register_schedule(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ScheduleCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "schedule",
      "Map a task graph (JSON, see docs/formats.md), or a model on the devices of a machine "
      "file, onto its devices with a planner");
  command
      ->add_option("input", options->task_graph,
                   "Task graph JSON file, or an ONNX model when --machine is given")
      ->required();
  command->add_option("--machine", options->machine,
                      "Machine file (JSON): the input is a model, costed on these devices");
  add_costs_option(command, options->costs);
  add_model_load_options(command, options->model);
  command->add_option("--algo", options->algo, "Planner: " + known_algorithms())
      ->capture_default_str();
  command->add_option("--objective", options->objective, "latency or throughput")
      ->check(CLI::IsMember({"latency", "throughput"}))
      ->capture_default_str();
  command
      ->add_option("--batch", options->batch,
                   "Inputs per batch; above 1 the graph is sliced (default: four slices of "
                   "B/4 as in DiviML)")
      ->capture_default_str();
  command->add_option("--slices", options->slices, "Slice sizes summing to the batch, e.g. 2,2,4")
      ->delimiter(',');
  command
      ->add_option("--time-limit", options->time_limit,
                   "Seconds for every planner (heft and greedy then place the rest cheaply; "
                   "annealing, evolution, MILP keep their best); the lower bound gets half of it")
      ->check(positive_seconds())
      ->capture_default_str();
  command
      ->add_option("--gap", options->gap,
                   "MILP and MILP-SPLIT module solves stop once the incumbent is within this "
                   "fraction of the proven bound (0.01: 1%)")
      ->check(finite_in(0.0, 1.0))
      ->capture_default_str();
  command->add_option("--seed", options->seed, "Seed of the randomised searches")
      ->capture_default_str();
  command
      ->add_option("--iterations", options->iterations,
                   "Most moves tried by annealing and evolution")
      ->capture_default_str();
  command
      ->add_option("--symmetry", options->symmetry,
                   "MILP symmetry breaking: none, tasks, time, batch")
      ->capture_default_str();
  command
      ->add_option("--channels", options->channels,
                   "MILP-SPLIT channels between modules (0: automatic)")
      ->capture_default_str();
  command
      ->add_option("--solver-processes", options->solver_processes,
                   "MILP-SPLIT module solves run at once, each in a process (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command
      ->add_option("--solver-threads", options->solver_threads,
                   "Whole-graph milp: CBC's branch-and-bound threads (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command->add_flag("--coarsen", options->coarsen,
                    "Plan on the graph with its serial chains contracted (a task whose only "
                    "successor has it as only predecessor joins that successor), then run each "
                    "chain back to back; smaller programs for milp and milp-split. The lower "
                    "bound stays the one of the uncontracted graph");
  command->add_flag("--no-bound", options->skip_bound, "Do not compute the lower bound");
  command->add_option("-o,--output", options->plan_path, "Write the plan JSON here")
      ->check(path_given());
  command->add_option("--gantt", options->gantt_path, "Write an SVG Gantt chart here")
      ->check(path_given());
  command->add_flag("--json", options->json, "Print the report as JSON");
  command->callback([&action, options] { action = [options] { return run_schedule(*options); }; });
}

}  // namespace cleave::cli
