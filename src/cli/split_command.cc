// `cleave split`: cuts a model across machines into per-machine ONNX sub-models and a manifest.
#include <fmt/core.h>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/option_limits.h"
#include "pipeline/model_split.h"

namespace cleave::cli {

namespace {

int run_split_command(const ModelSplitSettings& settings, bool json) {
  const ModelSplit split = split_model_to_folder(settings);
  if (json) {
    fmt::print("{}\n", split.report.dump(2));
    return 0;
  }
  fmt::print("{}", split.text);
  return 0;
}

}  // namespace

void register_split(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<ModelSplitSettings>();
  auto json = std::make_shared<bool>(false);
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
                      "rates, default), profile (timed here, as `cleave plan --costs profile` "
                      "with the same --machine), static, or flops (FLOPs at the split's "
                      "10 GFLOP/s)");
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
  command->add_flag("--json", *json, "Print the report as JSON");
  command->callback([&action, o, json, speeds] {
    o->speeds_given = speeds->count() > 0;  // --speeds '' is a mistake, not "no speeds"
    action = [o, json] { return run_split_command(*o, *json); };
  });
}

}  // namespace cleave::cli
