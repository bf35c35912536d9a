// A stream program from its file or converted from an ONNX model, and the firing costs it runs by.
#include "pipeline/stream_model.h"

#include <fmt/core.h>

#include <filesystem>
#include <map>

#include "analysis/flops.h"
#include "frontend/costs.h"
#include "frontend/load.h"
#include "ir/verify.h"
#include "passes/optimize.h"
#include "stream/schedule.h"
#include "stream/stream_json.h"
#include "support/error.h"

namespace cleave {

namespace {

// The cost table cleave's planners use, at one thread (a profile is measured once and cached).
CostTable one_thread_costs(const Graph& graph, const std::string& source) {
  CostChoice choice;
  choice.source = source;
  choice.max_threads = 1;
  choice.threads_per_worker = 1;
  return choose_costs(graph, choice);
}

}  // namespace

bool is_stream_model(const std::string& path) {
  return std::filesystem::path(path).extension() == ".onnx";
}

StreamSource load_stream_source(const std::string& path, const StreamSourceOptions& options) {
  const int stages = options.stages;
  // The stage cut has no run to measure.
  const std::string costs = options.costs == "measured" ? "flops" : options.costs;
  StreamSource out;
  if (!is_stream_model(path)) {
    if (options.by_reference || stages > 0 || !options.shapes.empty()) {
      throw Error(
          fmt::format("stream: {} is a stream program; --no-replicate, --stages and --shape "
                      "apply to converting an ONNX model",
                      path));
    }
    out.program = load_stream_program(path);
    return out;
  }
  // Static loops and RNNs become per-step nodes before the graph passes run, so folding
  // removes what only constants feed and fusions see the steps.
  LoadOptions load;
  load.shapes = options.shapes;
  load.unroll_loops = true;
  out.graph = std::make_shared<Graph>(load_model(path, load));
  if (stages > 0) {
    const std::string name = out.graph->name.empty() ? "model" : out.graph->name;
    if (costs == "flops") {
      out.staged = graph_to_stages(*out.graph, stages, name);
    } else {
      const CostTable table = one_thread_costs(*out.graph, costs);
      std::vector<double> seconds(out.graph->node_capacity(), 0.0);
      for (NodeId id : out.graph->node_ids()) seconds[id] = table.seconds(id, 1);
      out.staged = graph_to_stages(*out.graph, stages, name, seconds);
    }
    out.program = StreamProgram{out.staged->root, path};
    verify_stream(out.program.root, path);
    return out;
  }
  out.conversion = graph_to_stream(*out.graph, out.graph->name.empty() ? "model" : out.graph->name,
                                   StreamConversionOptions{options.by_reference});
  out.program = StreamProgram{out.conversion->root, path};
  verify_stream(out.program.root, path);
  return out;
}

// "measured" leaves it to the executor (it fires each model filter before the run); "flops"
// charges a nominal 1 ns per FLOP; a cost table ("profile", "static", "analytical") sums its
// nodes' 1-thread seconds over the filter's model (the whole model's table, when the stages
// were cut by it). Splitters, joiners and built-in filters move pointers: 0.1 us per item
// they pop.
std::vector<double> stream_firing_costs(const StreamSource& loaded, const StreamProgram& program,
                                        const std::string& source) {
  if (source == "measured") return {};
  const StreamGraph graph = flatten_stream(program.root);
  std::map<std::string, double> stage_seconds;
  if (loaded.staged && !loaded.staged->stage_cost.empty()) {
    for (std::size_t k = 0; k < loaded.staged->stage_cost.size(); ++k) {
      stage_seconds[loaded.staged->root.streams[k].name] = loaded.staged->stage_cost[k];
    }
  }
  std::map<const Graph*, double> per_graph;
  std::vector<double> seconds;
  for (const StreamNode& node : graph.nodes) {
    if (node.kind != StreamNodeKind::kFilter || node.stream->op != FilterOp::kModel) {
      int64_t items = 0;
      for (int64_t p : node.pop) items += p;
      seconds.push_back(1e-7 * static_cast<double>(items));
      continue;
    }
    if (const auto it = stage_seconds.find(node.name); it != stage_seconds.end()) {
      seconds.push_back(it->second);
      continue;
    }
    const Graph& g = *node.stream->graph;
    auto [it, fresh] = per_graph.emplace(&g, 0.0);
    if (fresh) {
      if (source == "flops") {
        for (NodeId id : g.node_ids()) {
          it->second += 1e-9 * static_cast<double>(node_flops(g, id).value_or(0));
        }
      } else {
        const CostTable table = one_thread_costs(g, source);
        for (NodeId id : g.node_ids()) it->second += table.seconds(id, 1);
      }
    }
    seconds.push_back(it->second);
  }
  return seconds;
}

}  // namespace cleave
