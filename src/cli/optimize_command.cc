// `cleave optimize`: runs the graph passes on an ONNX model and writes the result as ONNX.
#include <fmt/core.h>
#include <fmt/format.h>
#include <onnx/checker.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "passes/optimize.h"

namespace cleave::cli {

namespace {

struct OptimizeSettings {
  std::string input;
  std::string output;
  bool no_fold = false;
  bool no_fuse = false;
  bool verbose = false;
  bool json = false;
  std::vector<std::string> passes;
  bool print_after_each = false;
};

// A model file, or a graph in the text form (ir/text.h) when the name ends in ".txt", so pass
// tests can be text files.
Graph read_graph(const std::string& path) {
  if (!path.ends_with(".txt")) return import_onnx(path);
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open the graph text file", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_graph(text.str());
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
}

// The checker's message, or "passed".
std::string check_model(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "passed";
}

nlohmann::json steps_json(const PassResult& result) {
  nlohmann::json steps = nlohmann::json::array();
  for (const PassResult& step : result.steps) {
    nlohmann::json counts = nlohmann::json::object();
    for (const auto& [name, count] : step.counts) counts[name] = count;
    steps.push_back({{"pass", step.pass}, {"counts", counts}});
  }
  return steps;
}

int run_optimize(const OptimizeSettings& settings) {
  Graph graph = read_graph(settings.input);
  try {
    verify_graph(graph);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", settings.input, e.what()));
  }
  std::size_t nodes_before = graph.node_count();
  std::size_t initializers_before = graph.initializers().size();

  OptimizeOptions options;
  options.fold_constants = !settings.no_fold;
  options.fuse_batchnorm = !settings.no_fuse;
  // Fused activations are Conv attributes that ONNX does not define; an exported model keeps
  // its Relu and Clip nodes (see conv_activation_fusion.h).
  options.fuse_activations = false;
  options.verify_each_step = true;
  if (settings.verbose)
    options.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  AfterPass print_graph_after;
  if (settings.print_after_each) {
    print_graph_after = [](const PassResult& step, const Graph& after) {
      fmt::print("// after {}\n{}\n", step.summary(), print_graph(after));
    };
  }
  PassResult result;
  try {
    result =
        settings.passes.empty() && !settings.print_after_each
            ? optimize_graph(graph, options)
            : run_passes(graph,
                         settings.passes.empty() ? optimize_pass_list(options) : settings.passes,
                         options, print_graph_after);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", settings.input, e.what()));
  }
  if (settings.output.empty()) return 0;

  onnx::ModelProto model = to_onnx(graph);
  std::string check = check_model(model);
  if (check != "passed") {
    // Models that already fail the checker (ops newer than this ONNX, custom domains) are
    // written anyway; a model the passes broke is not.
    std::string original_check = check_model(to_onnx(read_graph(settings.input)));
    if (original_check == "passed") {
      throw Error(
          fmt::format("{}: the optimized model fails the ONNX checker, the original "
                      "passes; nothing written: {}",
                      settings.input, check));
    }
  }
  write_model_file(model, settings.output);

  if (settings.json) {
    nlohmann::json json = {{"input", settings.input},
                           {"output", settings.output},
                           {"nodes_before", nodes_before},
                           {"nodes_after", graph.node_count()},
                           {"initializers_before", initializers_before},
                           {"initializers_after", graph.initializers().size()},
                           {"steps", steps_json(result)},
                           {"onnx_check", check}};
    fmt::print("{}\n", json.dump(2));
  } else {
    fmt::print("wrote {}: {} -> {} nodes, {} -> {} initializers; ONNX checker: {}\n",
               settings.output, nodes_before, graph.node_count(), initializers_before,
               graph.initializers().size(), check);
  }
  return 0;
}

}  // namespace

void register_optimize(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<OptimizeSettings>();
  CLI::App* command = app.add_subcommand(
      "optimize",
      "Fold constants, remove dead code and Identity/Dropout, fuse Conv+BatchNormalization; "
      "write the result as ONNX");
  command->add_option("input", settings->input, "ONNX model to read")->required();
  command->add_option("output", settings->output,
                      "ONNX file to write (may be left out with --print-after-each)");
  command->add_flag("--no-fold", settings->no_fold, "Do not fold constants");
  command->add_flag("--no-fuse", settings->no_fuse, "Do not fuse Conv+BatchNormalization");
  command->add_flag("--verbose", settings->verbose, "Print what each pass changed (to stderr)");
  command->add_flag("--json", settings->json, "Print the summary as JSON");
  command
      ->add_option(
          "--passes", settings->passes,
          fmt::format("Run these passes in this order instead: {}", fmt::join(pass_names(), ", ")))
      ->delimiter(',');
  command->add_flag("--print-after-each", settings->print_after_each,
                    "Print the graph in the text form after each pass (an input ending in "
                    ".txt is read in the text form)");
  command->callback([&action, settings] {
    if (settings->output.empty() && !settings->print_after_each) {
      throw CLI::ValidationError("output", "an output file is needed without --print-after-each");
    }
    action = [settings] { return run_optimize(*settings); };
  });
}

}  // namespace cleave::cli
