// `cleave inspect`: sizes, FLOPs, op mix and the static critical path of an ONNX model.
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/graph_dot.h"
#include "analysis/model_summary.h"
#include "cli/commands.h"
#include "cli/option_limits.h"
#include "frontend/load.h"
#include "onnx/atomic_file.h"

namespace cleave::cli {

namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  std::string dot_path;
  std::string svg_path;
  std::string png_path;
};

int run_inspect(const InspectOptions& options) {
  for (const std::string& picture : {options.dot_path, options.svg_path, options.png_path})
    if (!picture.empty()) require_file_target(picture);
  // The report counts weights by their dims: read, they were the whole of inspect's memory
  // (resnet50: 119 MiB for a 97 MiB file). Each is still checked to lie inside its file.
  LoadOptions load;
  load.weights_unread = true;
  const Graph graph = import_model(options.model, load);
  const ModelSummary summary = summarize_model(graph);
  if (!options.dot_path.empty() || !options.svg_path.empty() || !options.png_path.empty()) {
    const std::string dot = graph_to_dot(graph, summary.static_cost.critical_path);
    if (!options.dot_path.empty()) write_file_atomically(options.dot_path, dot);
    if (!options.svg_path.empty()) render_dot(dot, "svg", options.svg_path);
    if (!options.png_path.empty()) render_dot(dot, "png", options.png_path);
  }
  if (options.json) {
    nlohmann::json json = summary_to_json(summary);
    json["model"] = options.model;
    fmt::print("{}\n", json.dump(2));
  } else {
    fmt::print("model:        {}\n{}", options.model, format_summary(summary));
  }
  return 0;
}

}  // namespace

void register_inspect(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* command = app.add_subcommand(
      "inspect",
      "Report a model's size, FLOPs, op histogram and static critical path (Ramiel weights)");
  command->add_option("model", options->model, "ONNX model file")->required();
  command->add_flag("--json", options->json, "Print every number as JSON instead of the report");
  command
      ->add_option("--dot", options->dot_path, "Write a Graphviz DOT drawing, critical path in red")
      ->check(path_given());
  command->add_option("--svg", options->svg_path, "Render the drawing to SVG (needs Graphviz)")
      ->check(path_given());
  command->add_option("--png", options->png_path, "Render the drawing to PNG (needs Graphviz)")
      ->check(path_given());
  command->callback([&action, options] { action = [options] { return run_inspect(*options); }; });
}

}  // namespace cleave::cli
