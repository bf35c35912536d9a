// Model loading, cost tables and a model's task graph on a machine file, shared by commands.
#include "cli/model_task_graph.h"

#include <fmt/core.h>

#include <functional>

#include "frontend/costs.h"
#include "frontend/load.h"
#include "machine/machine.h"

namespace cleave::cli {

std::function<void(const std::string&)> log_to_stderr(bool verbose) {
  if (!verbose) return {};
  return [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
}

void add_shape_option(CLI::App* command, std::vector<std::string>& shapes) {
  command->add_option("--shape", shapes,
                      "name=d0,d1,... fixes an input's symbolic dims (repeatable)");
}

void add_model_load_options(CLI::App* command, ModelSettings& settings) {
  add_shape_option(command, settings.shapes);
  command->add_flag("--no-optimize", settings.no_optimize, "Skip the graph passes");
  command->add_flag("-v,--verbose", settings.verbose, "Log each step");
}

LoadOptions load_options_for(const ModelSettings& settings, bool weights_unread) {
  LoadOptions options;
  options.weights_unread = weights_unread;
  options.shapes = parse_input_shapes(settings.shapes);
  options.optimize = !settings.no_optimize;
  options.log = log_to_stderr(settings.verbose);
  return options;
}

Graph load_model_for(const ModelSettings& settings, bool weights_unread) {
  return load_model(settings.model, load_options_for(settings, weights_unread));
}

CostTable costs_for(const Graph& graph, const std::string& source, int max_threads, bool verbose,
                    int threads_per_worker) {
  CostChoice choice;
  choice.source = source;
  choice.max_threads = max_threads;
  choice.threads_per_worker = threads_per_worker;
  choice.progress = log_to_stderr(verbose);
  return choose_costs(graph, choice);
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
  return cleave::model_task_graph(graph, machine, cost_source, log_to_stderr(settings.verbose),
                                  settings.model);
}

}  // namespace cleave::cli
