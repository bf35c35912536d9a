// Model options, cost tables and a model's task graph on a machine file, shared by CLI commands.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "frontend/load.h"
#include "ir/graph.h"
#include "plan/task_graph.h"

namespace cleave::cli {

/// How a command loads a model: the file, `--shape` fixes, whether to run the graph passes.
struct ModelSettings {
  std::string model;
  std::vector<std::string> shapes;
  bool no_optimize = false;
  bool verbose = false;
};

/// Adds the repeatable `--shape name=d0,d1,...` (parse_input_shapes reads it).
void add_shape_option(CLI::App* command, std::vector<std::string>& shapes);

/// Adds `--shape`, `--no-optimize` and `-v,--verbose` (not the model argument itself).
void add_model_load_options(CLI::App* command, ModelSettings& settings);

/// The LoadOptions of the settings: `--shape`, `--no-optimize`, -v's log.
LoadOptions load_options_for(const ModelSettings& settings, bool weights_unread = false);

/// Imports, verifies and (unless --no-optimize) simplifies the model; with `weights_unread`,
/// without reading its weights (LoadOptions::weights_unread).
Graph load_model_for(const ModelSettings& settings, bool weights_unread = false);

/// With `verbose`, a log printing each line on stderr; else an empty one.
std::function<void(const std::string&)> log_to_stderr(bool verbose);

/// The cost table named by `--costs` (choose_costs, frontend/costs.h): "static", "analytical"
/// or "profile" (1..max_threads threads, in the family `threads_per_worker` runs); -v logs.
CostTable costs_for(const Graph& graph, const std::string& source, int max_threads, bool verbose,
                    int threads_per_worker = 1);

/// Adds `--costs profile|static|analytical` (default `source`'s current value).
void add_costs_option(CLI::App* command, std::string& source);

/// The task graph of a model on the devices of a machine file: one task per node, each
/// device's time = the node's cost at the device's thread count / the device's speed. The
/// machine file is read first, so a bad one is reported before the model is loaded or
/// profiled. Profiles use at most as many threads as this host has cores.
TaskGraph model_task_graph(const ModelSettings& settings, const std::string& machine_path,
                           const std::string& cost_source);

}  // namespace cleave::cli
