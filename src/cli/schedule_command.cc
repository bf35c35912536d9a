// `cleave schedule`: plan a task graph (or a model on a machine) with one of the planners and
// report the predicted timeline.
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "plan/plan.h"
#include "plan/schedule/schedule_report.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"
#include "support/atomic_output.h"
#include "support/error.h"
#include "viz/gantt.h"

namespace cleave::cli {

namespace {

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

ScheduleSetup setup_of(const ScheduleCommandOptions& command, const TaskGraph& per_sample) {
  return {command.task_graph,
          command.algo,
          command.objective,
          command.batch,
          command.batch > 1 || !command.slices.empty(),
          per_sample.tasks.size(),
          command.plan_path,
          command.gantt_path};
}

int run_lower_bound_only(const ScheduleSetup& setup, const TaskGraph& graph,
                         const ScheduleOptions& options, bool json) {
  if (!lower_bound_function()) {
    throw Error(fmt::format("schedule: unknown algorithm \"{}\" (known: {})", kLowerBoundAlgo,
                            known_algorithms()));
  }
  const ScheduleBound bound = compute_schedule_bound(graph, options);
  if (!bound.seconds) throw Error(fmt::format("schedule: lower bound failed: {}", bound.problem));
  if (json) {
    fmt::print("{}\n", lower_bound_json(setup, bound).dump(2));
  } else {
    fmt::print("{}", lower_bound_text(setup, graph, bound));
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
  const ScheduleSetup setup = setup_of(command, per_sample);
  if (command.algo == kLowerBoundAlgo)
    return run_lower_bound_only(setup, graph, options, command.json);
  bool known = false;
  for (const SchedulerEntry& entry : schedulers()) known = known || entry.name == command.algo;
  if (!known) {
    throw Error(fmt::format("schedule: unknown algorithm \"{}\" (known: {})", command.algo,
                            known_algorithms()));
  }

  Plan plan = schedule(graph, command.algo, options);
  validate_plan(plan, graph);
  const Simulation simulation = simulate(plan, graph);
  const ScheduleBound bound = command.skip_bound
                                  ? ScheduleBound{std::nullopt, "skipped (--no-bound)"}
                                  : compute_schedule_bound(graph, options);
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

  if (command.json) {
    fmt::print("{}\n", schedule_json(setup, graph, plan, simulation, bound).dump(2));
  } else {
    fmt::print("{}", schedule_text(setup, graph, plan, simulation, bound));
  }
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
