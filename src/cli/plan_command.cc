// `cleave plan`: cost a model, plan it, and write the plan and its chart.
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "frontend/planning_load.h"
#include "frontend/stage_plan.h"
#include "machine/machine.h"
#include "pipeline/family_search.h"
#include "plan/simulator.h"
#include "support/atomic_output.h"
#include "support/cpu_quota.h"
#include "viz/gantt.h"

namespace cleave::cli {

namespace {

void add_model_options(CLI::App* command, ModelSettings& settings) {
  command->add_option("model", settings.model, "ONNX model file")->required();
  add_model_load_options(command, settings);
}

struct PlanSettings {
  ModelSettings model;
  std::string strategy = "auto";
  std::string costs = "profile";
  int workers = 2;
  int threads_per_worker = 1;
  int samples = 1;
  double time_limit = 10;
  std::string machine;  // Devices (e.g. MPI ranks) from a machine file, instead of --workers.
  std::string output;
  std::string gantt;
  bool json = false;
  bool explain = false;   // The candidate table of every family.
  bool simulate = false;  // Plan on paper for the machine file, however large.
};

// The graph to plan and its fingerprint. A profile runs the model, so it loads it whole; on
// paper only the weights' sizes count (a model larger than this host's memory plans too).
// Other plans, a machine file's too (a split's row slices weights as sizes), read sizes only
// as well, but name their model by the fingerprint of every weight: the bytes are hashed from
// the file, not held (load_for_planning).
PlanningModel model_to_plan(const PlanSettings& settings, const std::string& cost_source) {
  const bool simulate = settings.simulate;
  if (cost_source == "profile" || simulate) {
    PlanningModel model{load_model_for(settings.model, simulate), "", true};
    model.fingerprint = graph_fingerprint(model.graph);
    return model;
  }
  return load_for_planning(settings.model.model, load_options_for(settings.model));
}

int run_plan(const PlanSettings& settings) {
  // Bad targets are refused before planning, which may profile for minutes.
  if (!settings.output.empty()) require_file_target(settings.output);
  if (!settings.gantt.empty()) require_file_target(settings.gantt);
  // A bad machine file is reported before the model is loaded or profiled.
  std::optional<Machine> machine;
  if (!settings.machine.empty()) machine = read_machine(settings.machine);
  if (settings.simulate && !machine) throw Error("--simulate: needs --machine FILE to plan for");
  // On paper nothing is timed: a profile would measure this host, not the machine file's.
  const std::string cost_source =
      settings.simulate && settings.costs == "profile" ? "analytical" : settings.costs;
  if (settings.simulate)
    for (Device& device : machine->devices) device.simulated = true;
  ModelPlanOptions options;
  options.machine = machine;
  options.strategy = settings.strategy;
  options.workers = settings.workers;
  options.threads_per_worker = settings.threads_per_worker;
  options.samples = settings.samples;
  options.time_limit_seconds = settings.time_limit;
  // Before the weights are loaded: the rates' probe buffers then never sit beside them.
  if (cost_source == "analytical") measure_peak_rates(cost_threads_for(options));
  PlanningModel model = model_to_plan(settings, cost_source);
  const Graph& graph = model.graph;
  const std::string& fingerprint = model.fingerprint;
  // The stage plan alone on a machine file's devices (auto weighs it among the others).
  CostedPlan costed =
      settings.strategy == "pipeline" && machine
          ? plan_stages_with_costs(graph, cost_source, options,
                                   log_to_stderr(settings.model.verbose))
          : plan_with_costs(graph, cost_source, options, log_to_stderr(settings.model.verbose));
  const CostTable& costs = costed.costs;
  ModelPlan& plan = costed.plan;
  if (settings.strategy == "auto") add_split_and_stage_candidates(graph, costs, options, plan);
  Simulation simulation = simulate(plan.plan, plan.tasks);
  if (!settings.output.empty()) write_model_plan(settings.output, plan, graph, fingerprint);
  if (!settings.gantt.empty()) {
    write_gantt_svg(settings.gantt, plan.plan, plan.tasks, simulation,
                    fmt::format("predicted: {} ({})", settings.model.model, plan.plan.strategy));
  }
  if (settings.json) {
    nlohmann::json report = model_plan_to_json(plan, graph, fingerprint);
    report.erase("task_graph");
    report["planning_ms"] = plan.planning_seconds * 1e3;
    report["planning_seconds"] = plan.planning_seconds;
    report["nodes"] = graph.node_count();
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("model       {} ({} nodes)\n", settings.model.model, graph.node_count());
  fmt::print("costs       {}\n", costs.source);
  if (costs.level) fmt::print("level       {}\n", level_text(*costs.level));
  if (settings.explain || settings.simulate) {
    fmt::print("candidates\n{}", candidate_table_text(plan));
  } else {
    for (const auto& candidate : plan.candidates) {
      fmt::print("candidate   {:<38} predicted {:.3f} ms\n", candidate.configuration,
                 candidate.predicted_seconds * 1e3);
    }
  }
  fmt::print("family      {} ({})\n", plan.family, plan.configuration);
  if (plan.plan.notes.contains("winograd_budget"))
    fmt::print("winograd    {}\n", plan.plan.notes["winograd_budget"].get<std::string>());
  fmt::print("plan        {} on {} worker(s) x {} thread(s), {} sample(s)\n", plan.plan.strategy,
             plan.tasks.machine.size(), plan.threads_per_worker, plan.plan.batch);
  fmt::print("predicted   {:.3f} ms (sequential sum {:.3f} ms at 1 thread)\n",
             plan.plan.makespan * 1e3, costs.total_seconds(1) * 1e3);
  for (std::size_t w = 0; w < plan.plan.order.size(); ++w) {
    // On paper a cluster may have hundreds of ranks, most of them idle: only the busy ones.
    if (settings.simulate && plan.plan.order[w].empty()) continue;
    fmt::print("worker {}    {} tasks, busy {:.3f} ms, idle {:.3f} ms\n", w,
               plan.plan.order[w].size(), simulation.busy[w] * 1e3, simulation.idle[w] * 1e3);
  }
  if (plan.plan.notes.contains("clusters_before_merge")) {
    fmt::print("clusters    {} linear, {} after merging\n",
               plan.plan.notes["clusters_before_merge"].get<int>(),
               plan.plan.notes["clusters_after_merge"].get<int>());
  }
  fmt::print("planned in  {}\n", planning_time_text(plan));
  if (!settings.output.empty()) fmt::print("plan file   {}\n", settings.output);
  if (!settings.gantt.empty()) fmt::print("gantt       {}\n", settings.gantt);
  return 0;
}

}  // namespace

void register_plan(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<PlanSettings>();
  CLI::App* command = app.add_subcommand("plan", "Plan where and in which order every node runs");
  add_model_options(command, settings->model);
  command
      ->add_option(
          "--strategy", settings->strategy,
          "auto, sequential, data-parallel (--samples N: each worker its own samples), "
          "pipeline (with --machine: a stage per device, --samples N streamed through), lc, "
          "clone, hypercluster, switched-hypercluster, or a scheduler (heft, met, greedy, "
          "annealing, evolution, milp, milp-split)")
      ->check(CLI::IsMember(model_strategies()))
      ->default_val("auto");
  add_costs_option(command, settings->costs);
  command
      ->add_option("--workers", settings->workers,
                   "Parallel workers (default: the cores this process may use, its cgroup CPU "
                   "quota included)")
      ->default_val(usable_cores())
      ->check(integer_in(1, kMaxWorkers));
  command
      ->add_option("--threads-per-worker", settings->threads_per_worker,
                   "Intra-op threads per worker")
      ->default_val(1)
      ->check(thread_count());
  command->add_option("--samples", settings->samples, "Samples in flight (hyperclustering)")
      ->default_val(1)
      ->check(integer_in(1, kMaxSamples));
  command->add_option("--time-limit", settings->time_limit, "Seconds for searching planners")
      ->default_val(10)
      ->check(positive_seconds());
  command->add_option("--machine", settings->machine,
                      "Machine file whose devices are the workers (e.g. MPI ranks: speed, "
                      "memory, links); replaces --workers; plans must fit each device's memory");
  command->add_option("-o,--output", settings->output, "Write the plan as JSON")
      ->check(path_given());
  command->add_option("--gantt", settings->gantt, "Write the predicted timeline as a Gantt SVG")
      ->check(path_given());
  command->add_flag("--json", settings->json, "Print the plan as JSON");
  command->add_flag("--explain", settings->explain,
                    "Print every family's candidates: configuration, prediction, memory, "
                    "why rejected");
  command->add_flag("--simulate", settings->simulate,
                    "Plan on paper for --machine (any size; analytical costs unless --costs; the "
                    "weights are not read, only their sizes)");
  command->callback([settings, &action] { action = [settings] { return run_plan(*settings); }; });
}

}  // namespace cleave::cli
