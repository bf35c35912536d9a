// `cleave split`: cuts a model across machines into per-machine ONNX sub-models and a manifest.
#include <fmt/core.h>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/graph_dot.h"
#include "cli/commands.h"
#include "cli/option_limits.h"
#include "cost/cost_table.h"
#include "frontend/load.h"
#include "machine/machine.h"
#include "spatial/search.h"
#include "spatial/split_choice.h"
#include "spatial/split_machine.h"
#include "spatial/split_model.h"
#include "spatial/submodel_export.h"
#include "support/atomic_output.h"

namespace cleave::cli {

namespace {

struct SplitCommandOptions {
  std::string model;
  int nodes = 0;
  std::string dim = "h";
  std::string speeds;
  bool speeds_given = false;
  std::string config;
  std::string machine;
  bool search = false;
  std::string objective = "terms";
  std::string costs = "analytical";
  std::vector<std::string> shapes;
  std::string output;
  std::string dot;
  std::string svg;
  bool json = false;
  bool no_fuse = false;
  bool force = false;
  double link_gbits = 1;
  int fuse_depth = 0;
};

int run_split_command(const SplitCommandOptions& o) {
  // Every output checked before the work: the folder (replaced only with --force, never one
  // holding an input) and the pictures beside it.
  AtomicFolder folder(o.output,
                      {o.force ? FolderRules::Existing::kReplace : FolderRules::Existing::kRefuse,
                       {o.model, o.config, o.machine}});
  for (const std::string& picture : {o.dot, o.svg})
    if (!picture.empty()) require_file_target(picture);
  if (o.nodes < 1 || o.nodes > 1024)
    throw Error(fmt::format("--nodes: expected 1..1024 machines, got {}", o.nodes));
  SplitModelOptions options;
  options.split.machines = o.nodes;
  options.fuse = !o.no_fuse;
  options.cost.bytes_per_second = o.link_gbits * 1e9 / 8;
  if (!(o.link_gbits > 0)) throw Error("--link-gbits: expected a positive link speed");
  if (o.fuse_depth < 0) throw Error("--fuse-depth: expected 0 or more layers");
  options.cost.fixed_fuse_depth = o.fuse_depth;
  std::vector<SplitDim> dims;
  if (o.dim == "auto") {
    dims = {SplitDim::kH, SplitDim::kW, SplitDim::kC, SplitDim::kHW};
  } else if (auto dim = parse_split_dim(o.dim); dim && *dim != SplitDim::kNone) {
    dims = {*dim};
  } else {
    throw Error(fmt::format("--dim: expected h, w, c, hw or auto, got \"{}\"", o.dim));
  }
  std::optional<Machine> machine_file;
  if (!o.machine.empty()) {
    use_split_machine(machine_file.emplace(read_machine(o.machine)), o.machine, o.nodes, options);
  }
  if (o.speeds_given) {
    options.split.speeds = parse_speeds(o.speeds, o.nodes);
    options.cost.speeds = options.split.speeds;
  }
  if (!o.config.empty()) options.split.layers = read_layer_configs(o.config);
  const std::string fingerprint = file_fingerprint(o.model);
  LoadOptions load;
  load.shapes = parse_input_shapes(o.shapes);
  load.fuse_activations = false;  // sub-models must stay standard ONNX
  Graph graph = load_model(o.model, load);
  try {
    validate_layer_configs(graph, options.split);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", o.config, e.what()));
  }

  SearchObjective objective = SearchObjective::kTerms;
  if (o.objective == "seconds") {
    objective = SearchObjective::kSeconds;
  } else if (o.objective != "terms") {
    throw Error(fmt::format("--objective: expected terms or seconds, got \"{}\"", o.objective));
  }
  if (o.objective != "terms" && !o.search) throw Error("--objective needs --search");
  if (o.costs != "analytical" && o.costs != "static" && o.costs != "flops")
    throw Error(fmt::format("--costs: expected analytical, static or flops, got \"{}\"", o.costs));
  std::optional<CostTable> costs;
  if (objective == SearchObjective::kSeconds && o.costs != "flops")
    costs =
        o.costs == "static" ? static_costs(graph) : analytical_costs(graph, measure_peak_rates(1));

  const SplitChoice choice =
      choose_split(graph, options, dims, o.search, objective, costs ? &*costs : nullptr,
                   machine_file ? &*machine_file : nullptr);
  const std::optional<SplitResult>& best = choice.best;
  const auto& tried = choice.tried;
  const auto& over_memory = choice.over_memory;
  if (!best) {
    std::string reasons;
    for (std::size_t i = 0; i < tried.size(); ++i)
      reasons += fmt::format("; along {}: {}", tried[i].first, over_memory[i]);
    throw Error(
        fmt::format("{}: no split of {} on {} machines keeps each machine's weights within "
                    "its memory{} (split along c to slice the weights, or use more "
                    "machines)",
                    o.machine, o.model, o.nodes, reasons));
  }
  if (o.nodes > 1 && best->report.gathers.size() == graph.node_count())
    throw Error(fmt::format("{}: no layer can be split along {} (first reason: {})", o.model, o.dim,
                            best->report.gathers.front().reason));
  write_split_folder(*best, folder, o.model, fingerprint);
  if (!o.dot.empty() || !o.svg.empty()) {
    std::string dot = graph_to_dot(best->partitioned.graph, {});
    if (!o.dot.empty()) render_dot(dot, "dot", o.dot);
    if (!o.svg.empty()) render_dot(dot, "svg", o.svg);
  }
  folder.commit();
  nlohmann::json report = split_report_json(*best);
  report["model"] = o.model;
  report["output"] = o.output;
  report["dim"] = std::string(split_dim_name(options.split.dim));
  nlohmann::json candidates = nlohmann::json::array();
  for (std::size_t i = 0; i < tried.size(); ++i) {
    candidates.push_back({{"dim", tried[i].first}, {"predicted_seconds", tried[i].second}});
    if (!over_memory[i].empty()) candidates.back()["over_memory"] = over_memory[i];
  }
  report["candidates"] = candidates;
  if (!choice.searches.empty()) report["seconds_search"] = choice.searches;
  if (o.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("{}", split_choice_text(choice, o.output));
  return 0;
}

}  // namespace

void register_split(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<SplitCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "split",
      "Split every layer of a model across machines (H, W, C or an HxW grid): per-machine ONNX "
      "sub-models and a manifest of their transfers");
  command->add_option("model", o->model, "ONNX model to split")->required();
  command->add_option("--nodes", o->nodes, "Number of machines")->required();
  command->add_option("--dim", o->dim, "Split direction: h, w, c, hw (grid) or auto (default h)");
  CLI::Option* speeds =
      command->add_option("--speeds", o->speeds, "Relative machine speeds, e.g. 1,3,1 (shares)");
  command->add_option("--config", o->config,
                      "Per-layer JSON {\"layers\": {NAME: {\"dim\": D, \"shares\": [..]}}}");
  command->add_option("--machine", o->machine,
                      "Machine file: device speeds and link bandwidths for the cost model; a "
                      "device's memory_bytes bounds the weights its machine holds (a split that "
                      "does not fit is refused, or under --dim auto set aside)");
  command->add_flag("--search", o->search,
                    "Search each layer's shares (thesis 3.5, pruned) instead of speed shares");
  command->add_option("--objective", o->objective,
                      "What --search minimises: terms (the thesis's weighted operations, data, "
                      "overlap and balance, per layer) or seconds (cost table + link bandwidths, "
                      "chains of layers together; the terms choice is kept if predicted faster)");
  command->add_option("--costs", o->costs,
                      "Layer seconds for --objective seconds: analytical (this CPU's measured "
                      "rates, default), static, or flops (FLOPs at the split's 10 GFLOP/s)");
  command->add_option("--shape", o->shapes, "Fix an input shape: NAME=D,D,..");
  command->add_option("-o,--output", o->output, "Folder to write (whole or not at all)")
      ->required()
      ->check(path_given());
  command->add_flag("--force", o->force,
                    "Replace an existing non-empty output folder (never one holding an input)");
  command->add_option("--dot", o->dot, "Write the partitioned graph as Graphviz dot")
      ->check(path_given());
  command->add_option("--svg", o->svg, "Write the partitioned graph as SVG (needs dot)")
      ->check(path_given());
  command->add_option("--link-gbits", o->link_gbits,
                      "Link speed of the default cost model, Gbit/s (default 1)");
  command->add_option("--fuse-depth", o->fuse_depth,
                      "Fuse exactly the first K layers per tile, without the cost model "
                      "(DeepThings' fixed-depth fused tiles; 0 = let the cost model decide)");
  command->add_flag("--no-fuse", o->no_fuse, "Never compute halos redundantly (no fused tiles)");
  command->add_flag("--json", o->json, "Print the report as JSON");
  command->callback([&action, o, speeds] {
    o->speeds_given = speeds->count() > 0;  // --speeds '' is a mistake, not "no speeds"
    action = [o] { return run_split_command(*o); };
  });
}

}  // namespace cleave::cli
