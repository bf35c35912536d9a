// Model loading, cost tables and a model's task graph on a machine file, shared by commands.
#include "cli/model_task_graph.h"

#include <fmt/core.h>

#include <algorithm>
#include <thread>

#include "machine/machine.h"
#include "pipeline/layout_choice.h"
#include "pipeline/load.h"

namespace cleave::cli {

void add_model_load_options(CLI::App* command, ModelSettings& settings) {
  command->add_option("--shape", settings.shapes,
                      "name=d0,d1,... fixes an input's symbolic dims (repeatable)");
  command->add_flag("--no-optimize", settings.no_optimize, "Skip the graph passes");
  command->add_flag("-v,--verbose", settings.verbose, "Log each step");
}

Graph load_model_for(const ModelSettings& settings) {
  LoadOptions options;
  options.shapes = parse_input_shapes(settings.shapes);
  options.optimize = !settings.no_optimize;
  if (settings.verbose)
    options.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  return load_model(settings.model, options);
}

CostTable costs_for(const Graph& graph, const std::string& source, int max_threads, bool verbose,
                    int threads_per_worker) {
  if (source == "static") return static_costs(graph);
  if (source == "analytical") return analytical_costs(graph, measure_peak_rates(max_threads));
  if (source != "profile") {
    throw Error(fmt::format("--costs: expected profile, static or analytical, got \"{}\"", source));
  }
  ProfileOptions options;
  options.max_threads = max_threads;
  if (verbose) options.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  options.convolution_family = measured_family(graph, threads_per_worker, options.progress);
  return profile_costs(graph, options);
}

void add_costs_option(CLI::App* command, std::string& source) {
  command
      ->add_option("--costs", source,
                   "Node costs: profile (measured here), static (Ramiel weights) or analytical "
                   "(roofline of this CPU)")
      ->check(CLI::IsMember({"profile", "static", "analytical"}))
      ->capture_default_str();
}

TaskGraph model_task_graph(const ModelSettings& settings, const std::string& machine_path,
                           const std::string& cost_source) {
  const Machine machine = read_machine(machine_path);
  const Graph graph = load_model_for(settings);
  int threads = 1;
  for (const Device& device : machine.devices) threads = std::max(threads, device.threads);
  // Measuring more threads than there are cores measures contention, not the device; the
  // table keeps the largest measured count's time beyond it.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const CostTable costs = costs_for(graph, cost_source, std::min(threads, cores), settings.verbose);
  TaskGraph tasks = task_graph_for(graph, costs, machine);
  tasks.check(settings.model);
  return tasks;
}

}  // namespace cleave::cli
