// `cleave export-tasks`: a model's task graph on a machine file, as the JSON `schedule` reads.
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "plan/task_graph.h"
#include "support/atomic_output.h"

namespace cleave::cli {

namespace {

struct ExportTasksOptions {
  ModelSettings model;
  std::string machine;
  std::string costs = "profile";
  std::string output = "tasks.json";
};

int run_export_tasks(const ExportTasksOptions& options) {
  require_file_target(options.output);
  const TaskGraph tasks = model_task_graph(options.model, options.machine, options.costs);
  // Written atomically: an error before or during the write leaves no partial file.
  write_task_graph(tasks, options.output);
  double edge_bytes = 0;
  for (std::size_t edge = 0; edge < tasks.edges.size(); ++edge) {
    edge_bytes += tasks.bytes_on_edge(edge);
  }
  fmt::print("{}: {} tasks, {} edges ({:.0f} bytes), {} devices, {} costs -> {}\n",
             options.model.model, tasks.tasks.size(), tasks.edges.size(), edge_bytes,
             tasks.machine.size(), options.costs, options.output);
  return 0;
}

}  // namespace

void register_export_tasks(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ExportTasksOptions>();
  CLI::App* command = app.add_subcommand(
      "export-tasks",
      "Write a model's task graph on a machine (per-device task times from its cost table, "
      "output and weight bytes, edges) as the task-graph JSON of docs/formats.md, for "
      "`cleave schedule tasks.json`");
  command->add_option("model", options->model.model, "ONNX model file")->required();
  command
      ->add_option("--machine", options->machine,
                   "Machine file (JSON, docs/formats.md): the devices, their speeds and links")
      ->required();
  command->add_option("-o,--output", options->output, "Task-graph JSON file to write")
      ->capture_default_str()
      ->check(path_given());
  add_costs_option(command, options->costs);
  add_model_load_options(command, options->model);
  command->callback(
      [&action, options] { action = [options] { return run_export_tasks(*options); }; });
}

}  // namespace cleave::cli
