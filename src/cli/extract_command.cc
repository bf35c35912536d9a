// `cleave extract`: writes a standalone ONNX model of some nodes of a model.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "ir/scope.h"
#include "onnx/extract.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

namespace cleave::cli {

namespace {

struct ExtractOptions {
  std::string input;
  std::string output;
  std::vector<std::string> nodes;
  std::string node_range;
  bool json = false;
};

NodeId node_named(const Graph& graph, const std::string& name, const std::string& origin) {
  auto id = graph.find_node(name);
  if (!id) throw Error(fmt::format("{}: no node is named '{}'", origin, name));
  return *id;
}

// A range end: a node name, or else a position in the topological order.
std::size_t range_position(const Graph& graph, const std::vector<NodeId>& order,
                           const std::string& end, const std::string& origin) {
  if (auto id = graph.find_node(end)) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), *id) - order.begin());
  }
  std::size_t position = 0;
  auto [last, error] = std::from_chars(end.data(), end.data() + end.size(), position);
  if (error != std::errc() || last != end.data() + end.size()) {
    throw Error(fmt::format("{}: no node is named '{}' (nor is it a position)", origin, end));
  }
  if (position >= order.size()) {
    throw Error(fmt::format("{}: position {} is past the last node ({} nodes)", origin, position,
                            order.size()));
  }
  return position;
}

std::vector<NodeId> select_nodes(const Graph& graph, const ExtractOptions& options) {
  if (options.nodes.empty() == options.node_range.empty()) {
    throw Error("extract: give either --nodes or --node-range");
  }
  std::vector<NodeId> selected;
  if (!options.nodes.empty()) {
    for (const std::string& name : options.nodes) {
      selected.push_back(node_named(graph, name, options.input));
    }
    return selected;
  }
  auto colon = options.node_range.find(':');
  if (colon == std::string::npos) {
    throw Error(fmt::format("extract: --node-range '{}' should be FIRST:LAST", options.node_range));
  }
  std::vector<NodeId> order = scoped_topological_order(graph);
  std::size_t first =
      range_position(graph, order, options.node_range.substr(0, colon), options.input);
  std::size_t last =
      range_position(graph, order, options.node_range.substr(colon + 1), options.input);
  if (first > last) {
    throw Error(
        fmt::format("{}: --node-range '{}': the first node comes after the last in "
                    "topological order",
                    options.input, options.node_range));
  }
  return {order.begin() + static_cast<std::ptrdiff_t>(first),
          order.begin() + static_cast<std::ptrdiff_t>(last) + 1};
}

// Graph inputs that are not initializers (IR < 4 models list those as inputs too).
std::vector<std::string> true_inputs(const onnx::GraphProto& graph) {
  std::set<std::string> initializers;
  for (const auto& tensor : graph.initializer()) initializers.insert(tensor.name());
  std::vector<std::string> result;
  for (const auto& info : graph.input()) {
    if (!initializers.count(info.name())) result.push_back(info.name());
  }
  return result;
}

int run_extract(const ExtractOptions& options) {
  Graph graph = import_onnx(options.input);
  std::vector<NodeId> selected = select_nodes(graph, options);
  onnx::ModelProto model;
  try {
    model = extract_submodel(graph, selected);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", options.input, e.what()));
  }
  write_model_file(model, options.output);
  std::vector<std::string> inputs = true_inputs(model.graph());
  std::vector<std::string> outputs;
  for (const auto& info : model.graph().output()) outputs.push_back(info.name());
  if (options.json) {
    nlohmann::json json = {{"input", options.input},
                           {"output", options.output},
                           {"nodes", model.graph().node_size()},
                           {"inputs", inputs},
                           {"outputs", outputs},
                           {"initializers", model.graph().initializer_size()}};
    fmt::print("{}\n", json.dump(2));
  } else {
    fmt::print("wrote {}: {} nodes, {} initializers\n  inputs:  {}\n  outputs: {}\n",
               options.output, model.graph().node_size(), model.graph().initializer_size(),
               fmt::join(inputs, ", "), fmt::join(outputs, ", "));
  }
  return 0;
}

}  // namespace

void register_extract(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ExtractOptions>();
  CLI::App* command = app.add_subcommand(
      "extract", "Write a standalone ONNX model of some nodes (inputs, outputs and weights found)");
  command->add_option("input", options->input, "ONNX model to read")->required();
  command->add_option("output", options->output, "ONNX file to write")->required();
  command->add_option("--nodes", options->nodes, "Node names, comma separated")->delimiter(',');
  command->add_option("--node-range", options->node_range,
                      "FIRST:LAST node names (or positions), inclusive, in topological order");
  command->add_flag("--json", options->json, "Print the summary as JSON");
  command->callback([&action, options] { action = [options] { return run_extract(*options); }; });
}

}  // namespace cleave::cli
