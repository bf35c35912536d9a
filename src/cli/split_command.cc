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
#include "machine/machine.h"
#include "pipeline/load.h"
#include "spatial/memory_fit.h"
#include "spatial/search.h"
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

  const auto user_layers = options.split.layers;
  std::optional<SplitResult> best;
  std::vector<std::pair<std::string, double>> tried;
  std::vector<std::string> over_memory;  // Per dim tried: why it does not fit, or empty.
  nlohmann::json searches = nlohmann::json::array();
  for (SplitDim dim : dims) {
    options.split.dim = dim;
    if (o.search)
      options.split.layers = searched_layer_configs(graph, options, user_layers, 10, objective,
                                                    costs ? &*costs : nullptr);
    SplitResult r = split_model(graph, options);
    if (objective == SearchObjective::kSeconds) {
      // The chain DP prices each layer's compute and what it receives; the split's list
      // schedule (fusion, joins, every op) is the final judge. The terms objective's shares
      // are split too and kept when predicted faster, so the seconds search is never worse
      // than terms on the same machine file; the report says which was kept.
      SplitModelOptions terms = options;
      terms.split.layers = searched_layer_configs(graph, options, user_layers, 10);
      SplitResult t = split_model(graph, terms);
      const double chain_s = r.report.optimized.predicted_seconds;
      const double terms_s = t.report.optimized.predicted_seconds;
      searches.push_back({{"dim", std::string(split_dim_name(dim))},
                          {"chain_predicted_seconds", chain_s},
                          {"terms_predicted_seconds", terms_s},
                          {"kept", terms_s < chain_s ? "terms" : "chain"}});
      if (terms_s < chain_s) r = std::move(t);
    }
    tried.emplace_back(std::string(split_dim_name(dim)), r.report.optimized.predicted_seconds);
    // The machine file's memory_bytes bounds each machine's weights (C splits slice them).
    over_memory.push_back(
        machine_file ? weights_over_memory(r.report.optimized.weight_bytes, *machine_file) : "");
    if (!over_memory.back().empty()) continue;
    if (!best || r.report.optimized.predicted_seconds < best->report.optimized.predicted_seconds)
      best = std::move(r);
  }
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
  if (!searches.empty()) report["seconds_search"] = searches;
  if (o.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  for (const std::string& line : best->report.log) fmt::print("{}\n", line);
  for (const auto& c : searches)
    fmt::print(
        "seconds search ({}): chain optimum predicted {:.3f} ms, terms optimum {:.3f} ms; "
        "kept {}\n",
        c["dim"].get<std::string>(), c["chain_predicted_seconds"].get<double>() * 1e3,
        c["terms_predicted_seconds"].get<double>() * 1e3, c["kept"].get<std::string>());
  const SplitStats& n = best->report.naive;
  const SplitStats& s = best->report.optimized;
  fmt::print("bytes transferred: naive {} -> optimised {} ({:.2f}x fewer); transfers {} -> {}\n",
             n.transfer_bytes, s.transfer_bytes,
             s.transfer_bytes ? double(n.transfer_bytes) / double(s.transfer_bytes) : 0.0,
             n.transfers, s.transfers);
  fmt::print("sync points: naive {} -> optimised {}; redundant output elements {}\n", n.sync_points,
             s.sync_points, s.redundant_elements);
  for (std::size_t m = 0; m < s.weight_bytes.size(); ++m)
    fmt::print("machine {}: weights {} bytes, peak activations {} bytes\n", m, s.weight_bytes[m],
               s.peak_activation_bytes[m]);
  fmt::print("whole model: {} bytes; predicted {:.3f} ms split vs {:.3f} ms whole\n",
             best->report.whole_model_peak_bytes, s.predicted_seconds * 1e3,
             best->report.whole_model_seconds * 1e3);
  for (const GatherNote& g : best->report.gathers)
    fmt::print("gathered on machine 0: {}: {}\n", g.node, g.reason);
  fmt::print("wrote {}\n", o.output);
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
