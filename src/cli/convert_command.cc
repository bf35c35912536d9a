// `cleave convert`: import, verify and re-export an ONNX model, or print its text form.
#include <fmt/core.h>
#include <onnx/checker.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

namespace cleave::cli {

namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  bool text = false;
  bool json = false;
};

int run_convert(const ConvertOptions& options) {
  if (options.output.empty() && !options.text) {
    throw Error("convert: give an output file, --text, or both");
  }
  Graph graph = import_onnx(options.input);
  try {
    verify_graph(graph);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", options.input, e.what()));
  }
  if (options.text) fmt::print("{}", print_graph(graph));
  if (options.output.empty()) return 0;

  onnx::ModelProto model;
  try {
    model = to_onnx(graph);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", options.output, e.what()));
  }
  // The checker's verdict is reported, not enforced: a model with ops this ONNX version does
  // not know fails it even though cleave converts it faithfully.
  std::string check = "passed";
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    check = e.what();
  }
  write_model_file(model, options.output);
  if (options.json) {
    nlohmann::json json = {{"input", options.input},
                           {"output", options.output},
                           {"nodes", graph.node_count()},
                           {"initializers", graph.initializers().size()},
                           {"onnx_check", check}};
    fmt::print("{}\n", json.dump(2));
  } else if (!options.text) {
    fmt::print("wrote {}: {} nodes, {} initializers; ONNX checker: {}\n", options.output,
               graph.node_count(), graph.initializers().size(), check);
  }
  return 0;
}

}  // namespace

void register_convert(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* command = app.add_subcommand(
      "convert", "Import, verify and re-export an ONNX model (or print its text form)");
  command->add_option("input", options->input, "ONNX model to read")->required();
  command->add_option("output", options->output, "ONNX file to write");
  command->add_flag("--text", options->text, "Print the graph's text form");
  command->add_flag("--json", options->json, "Print the summary as JSON");
  command->callback([&action, options] { action = [options] { return run_convert(*options); }; });
}

}  // namespace cleave::cli
