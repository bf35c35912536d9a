// `cleave split`'s driver: checks, load, the split choice, the folder written whole, the report.
#include "pipeline/model_split.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <optional>

#include "analysis/graph_dot.h"
#include "cost/cost_table.h"
#include "frontend/costs.h"
#include "frontend/load.h"
#include "machine/machine.h"
#include "pipeline/spatial_run.h"
#include "spatial/manifest.h"
#include "spatial/naive_partition.h"
#include "spatial/search.h"
#include "spatial/split_choice.h"
#include "spatial/split_machine.h"
#include "spatial/split_model.h"
#include "spatial/submodel_export.h"
#include "support/atomic_output.h"
#include "support/error.h"

namespace cleave {

namespace {

// The costs the seconds search prices the split with; none for the terms search or --costs flops.
std::optional<CostTable> search_costs(const ModelSplitSettings& o, SearchObjective objective,
                                      const Graph& graph, const std::optional<Machine>& machine) {
  if (o.costs != "analytical" && o.costs != "profile" && o.costs != "static" &&
      o.costs != "flops") {
    throw Error(
        fmt::format("--costs: expected analytical, profile, static or flops, got \"{}\"", o.costs));
  }
  if (objective != SearchObjective::kSeconds || o.costs == "flops") return std::nullopt;
  if (o.costs == "profile") {
    // As `cleave plan --machine` costs the model (plan_with_costs): its largest device's
    // threads, the family one thread runs; the copies priced as its spatial row prices them.
    CostChoice choice;
    choice.max_threads = machine ? profile_threads_for(*machine) : 1;
    return choose_costs(graph, choice);
  }
  return o.costs == "static" ? static_costs(graph) : analytical_costs(graph, measure_peak_rates(1));
}

// The report and text of the split written: its figures, the dims tried, and where a machine
// file priced it, the prediction of its run on the machine's ranks (predict_split).
ModelSplit split_report(const ModelSplitSettings& o, const SplitChoice& choice, SplitDim dim,
                        const std::optional<SplitPrediction>& predicted) {
  nlohmann::json report = split_report_json(*choice.best);
  report["model"] = o.model;
  report["output"] = o.output;
  report["dim"] = std::string(split_dim_name(dim));
  nlohmann::json candidates = nlohmann::json::array();
  for (std::size_t i = 0; i < choice.tried.size(); ++i) {
    candidates.push_back(
        {{"dim", choice.tried[i].first}, {"predicted_seconds", choice.tried[i].second}});
    if (!choice.over_memory[i].empty()) candidates.back()["over_memory"] = choice.over_memory[i];
  }
  report["candidates"] = candidates;
  if (!choice.searches.empty()) report["seconds_search"] = choice.searches;
  std::string text = split_choice_text(choice, o.output);
  if (predicted) {
    const double seconds = predicted->plan.plan.makespan;
    report["machine_prediction"] = {{"predicted_seconds", seconds},
                                    {"predicted_ms", seconds * 1e3},
                                    {"piece_costs", predicted->how}};
    text += fmt::format(
        "on {}'s ranks: predicted {:.3f} ms ({}; as `cleave plan --explain`'s "
        "spatial row)\n",
        o.machine, seconds * 1e3, predicted->how);
  }
  return {report, text};
}

}  // namespace

ModelSplit split_model_to_folder(const ModelSplitSettings& o) {
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
  // The graph every other family plans (the session's load, fused forms included), so that the
  // split is the candidate table's spatial row; the files written are standard ONNX all the
  // same (to_onnx writes the fused forms out), and the runners fuse them back.
  LoadOptions load;
  load.shapes = parse_input_shapes(o.shapes);
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
  const std::optional<CostTable> costs = search_costs(o, objective, graph, machine_file);
  if (costs) price_split_copies(*costs, options.cost);

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
  // With a machine file and seconds, the split is also priced as auto's table prices its
  // spatial row: what a run of this folder on the machine's ranks is predicted to take.
  std::optional<SplitPrediction> predicted;
  if (machine_file && costs)
    predicted = predict_split(graph, *best, options, *costs, *machine_file, 1);
  write_split_folder(*best, folder, o.model, fingerprint);
  if (!o.dot.empty() || !o.svg.empty()) {
    std::string dot = graph_to_dot(best->partitioned.graph, {});
    if (!o.dot.empty()) render_dot(dot, "dot", o.dot);
    if (!o.svg.empty()) render_dot(dot, "svg", o.svg);
  }
  folder.commit();
  return split_report(o, choice, options.split.dim, predicted);
}

}  // namespace cleave
