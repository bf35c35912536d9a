// `cleave stream`: schedule, print and run stream programs (filters, pipelines, split-joins).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/flops.h"
#include "analysis/graph_dot.h"
#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "ir/verify.h"
#include "onnx/atomic_file.h"
#include "passes/optimize.h"
#include "pipeline/load.h"
#include "runtime/npy.h"
#include "stream/executor.h"
#include "stream/fission.h"
#include "stream/from_graph.h"
#include "stream/placement.h"
#include "stream/schedule.h"
#include "stream/stages.h"
#include "stream/stream_dot.h"
#include "stream/stream_json.h"
#include "stream/stream_text.h"
#include "stream/unroll.h"

namespace cleave::cli {

namespace {

struct StreamCommandOptions {
  std::string program;
  bool json = false;
  bool text = false;
  std::vector<std::string> inputs;
  int64_t items = 0;
  int workers = 1;
  int64_t capacity_factor = 2;
  std::string output_dir;
  std::string dot;
  std::string svg;
  std::vector<std::string> fission;
  bool by_reference = false;
  std::string inputs_dir;
  int stages = 0;
  std::string costs = "flops";
  std::string placement = "balanced";
  std::string trace;
};

bool is_model(const std::string& path) {
  return std::filesystem::path(path).extension() == ".onnx";
}

// A program file as it is, or a model converted (thesis ch. 4); `graph` keeps the model.
struct Loaded {
  StreamProgram program;
  std::optional<StagedStream> staged;
  std::optional<StreamConversion> conversion;
  std::shared_ptr<Graph> graph;
};

Loaded load_program_or_model(const std::string& path, bool by_reference, int stages,
                             std::string costs) {
  if (costs == "measured") costs = "flops";  // the stage cut has no run to measure
  Loaded out;
  if (!is_model(path)) {
    if (by_reference || stages > 0) {
      throw Error(
          fmt::format("stream: {} is a stream program; --no-replicate and --stages apply "
                      "to converting an ONNX model",
                      path));
    }
    out.program = load_stream_program(path);
    return out;
  }
  // Static loops and RNNs become per-step nodes before the graph passes run (as load_model
  // runs them), so folding removes what only constants feed and fusions see the steps.
  LoadOptions load;
  load.optimize = false;
  out.graph = std::make_shared<Graph>(load_model(path, load));
  if (has_loops(*out.graph)) {
    unroll_static_loops(*out.graph, path);
    infer_shapes(*out.graph, path);
  }
  OptimizeOptions optimize;
  optimize.fuse_activations = true;
  optimize.fold_channel_scales = true;
  optimize_graph(*out.graph, optimize);
  verify_graph(*out.graph);
  if (stages > 0) {
    const std::string name = out.graph->name.empty() ? "model" : out.graph->name;
    if (costs == "flops") {
      out.staged = graph_to_stages(*out.graph, stages, name);
    } else {
      // The cost table cleave's planners use (a profile is measured once and cached).
      const CostTable table = costs_for(*out.graph, costs, 1, false);
      std::vector<double> seconds(out.graph->node_capacity(), 0.0);
      for (NodeId id : out.graph->node_ids()) seconds[id] = table.seconds(id, 1);
      out.staged = graph_to_stages(*out.graph, stages, name, seconds);
    }
    out.program = StreamProgram{out.staged->root, path};
    verify_stream(out.program.root, path);
    return out;
  }
  out.conversion = graph_to_stream(*out.graph, out.graph->name.empty() ? "model" : out.graph->name,
                                   StreamConversionOptions{by_reference});
  out.program = StreamProgram{out.conversion->root, path};
  verify_stream(out.program.root, path);
  return out;
}

int run_schedule(const StreamCommandOptions& o) {
  const StreamProgram program = load_stream_program(o.program, StreamLoadOptions{false, true});
  const auto start = std::chrono::steady_clock::now();
  const StreamGraph graph = flatten_stream(program.root);
  const StreamSchedule schedule = schedule_stream(graph, program.origin);
  const std::vector<ClosedFormRates> forms = closed_form_rates(program.root);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    fmt::print("{}\n", schedule_to_json(graph, schedule, forms));
    return 0;
  }
  fmt::print("scheduled in {:.3f} ms (flatten, balance equations, init, buffers, closed forms)\n",
             seconds * 1e3);
  fmt::print("{}: {} filters, {} actors, {} channels\n", program.origin,
             collect_filters(program.root).size(), graph.nodes.size(), graph.channels.size());
  fmt::print("steady state: {} input items -> {} output items per iteration\n",
             schedule.input_per_iteration, schedule.output_per_iteration);
  fmt::print("{:<32} {:>12} {:>8}\n", "actor", "repetitions", "init");
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    fmt::print("{:<32} {:>12} {:>8}\n", graph.nodes[v].name, schedule.repetitions[v],
               schedule.init[v]);
  }
  fmt::print("{:<40} {:>8} {:>9}\n", "channel", "buffer", "initial");
  for (std::size_t c = 0; c < graph.channels.size(); ++c) {
    fmt::print("{:<40} {:>8} {:>9}\n", graph.channels[c].name, schedule.buffers[c],
               schedule.initial_items[c]);
  }
  fmt::print("closed forms (thesis Eqs. 2.1-2.5):\n");
  for (const ClosedFormRates& r : forms) {
    if (r.pop && r.peek && r.push) {
      fmt::print("  {:<30} pop {} peek {} push {}\n", r.name, *r.pop, *r.peek, *r.push);
    } else {
      fmt::print("  {:<30} none\n", r.name);
    }
  }
  return 0;
}

int run_print(const StreamCommandOptions& o) {
  for (const std::string& picture : {o.dot, o.svg})
    if (!picture.empty()) require_file_target(picture);
  const Loaded loaded = load_program_or_model(o.program, o.by_reference, o.stages, o.costs);
  const Stream& root = loaded.program.root;
  if (!o.dot.empty()) write_file_atomically(o.dot, stream_to_dot(root));
  if (!o.svg.empty()) render_dot(stream_to_dot(root), "svg", o.svg);
  if (o.json) {
    fmt::print("{}\n", stream_to_json(root));
    return 0;
  }
  if (loaded.conversion) {
    const StreamConversion& c = *loaded.conversion;
    fmt::print("{}\n{}", print_instructions(c.instructions), print_stream(root));
    fmt::print(
        "{} live instructions, {} filters; replicated: {} filters, {} of {} FLOPs ({:.1f}%)\n",
        c.live_instructions, c.filters, c.replicated_filters, c.replicated_flops, c.total_flops,
        c.total_flops > 0
            ? 100.0 * static_cast<double>(c.replicated_flops) / static_cast<double>(c.total_flops)
            : 0.0);
    if (o.by_reference) {
      fmt::print("by reference: {} reader filters stand in for {} FLOPs that replication repeats\n",
                 c.reference_readers, c.referenced_flops);
    }
  } else if (loaded.staged) {
    const StagedStream& s = *loaded.staged;
    fmt::print("{}{} stages: nodes {}, FLOPs {}; tensors crossing each cut: {}\n",
               print_stream(root), s.stage_nodes.size(), fmt::join(s.stage_nodes, " "),
               fmt::join(s.stage_flops, " "), fmt::join(s.cut_values, " "));
    if (!s.stage_cost.empty()) {
      const double slowest = *std::max_element(s.stage_cost.begin(), s.stage_cost.end());
      std::vector<std::string> ms;
      for (double c : s.stage_cost) ms.push_back(fmt::format("{:.3f}", c * 1e3));
      fmt::print(
          "stage ms by the {} cost table: {}; predicts {:.1f} items/s with one worker "
          "per stage\n",
          o.costs, fmt::join(ms, " "), slowest > 0 ? 1.0 / slowest : 0.0);
    }
  } else {
    fmt::print("{}", print_stream(root));
  }
  return 0;
}

// The items of one npy file: its leading axis counts them. They are views of the file's
// buffer, so rows that follow each other need no copy when a filter reads them together.
std::vector<Tensor> items_of(const std::string& file) {
  const Tensor all = read_npy(file);
  if (all.rank() == 0 || all.dim(0) == 0) {
    throw Error(fmt::format("{}: needs a leading axis of items, got {}", file, all.describe()));
  }
  std::vector<int64_t> shape(all.shape().begin() + 1, all.shape().end());
  const std::size_t bytes = all.byte_size() / static_cast<std::size_t>(all.dim(0));
  std::vector<Tensor> items;
  for (int64_t i = 0; i < all.dim(0); ++i) {
    if (all.storage()) {
      const auto base = static_cast<std::size_t>(static_cast<const std::byte*>(all.raw()) -
                                                 all.storage()->data());
      items.push_back(Tensor::view(all.dtype(), shape, all.storage(), base + i * bytes));
    } else {
      Tensor t = Tensor::allocate(all.dtype(), shape);
      std::memcpy(t.raw(), static_cast<const std::byte*>(all.raw()) + i * bytes, bytes);
      items.push_back(std::move(t));
    }
  }
  return items;
}

// The program input: one file for a program; for a model one per graph input, interleaved
// round robin in graph input order. --items repeats the file's items as needed.
// --inputs DIR: every NAME.npy in the folder; a model needs one per graph input and no more.
std::map<std::string, std::string> files_in(const std::string& dir, const Graph* graph) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error(fmt::format("stream run: --inputs {}: not a folder", dir));
  }
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".npy") {
      files[entry.path().stem().string()] = entry.path().string();
    }
  }
  if (graph) {
    std::vector<std::string> names;
    for (ValueId id : graph->inputs()) {
      const std::string& name = graph->value(id).name;
      names.push_back(name);
      if (!files.count(name)) {
        throw Error(fmt::format("stream run: --inputs {}: missing {}.npy for graph input \"{}\"",
                                dir, name, name));
      }
    }
    for (const auto& [name, file] : files) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        throw Error(fmt::format("stream run: --inputs {}: {} names no graph input (inputs: {})",
                                dir, file, fmt::join(names, ", ")));
      }
    }
  } else if (files.size() != 1) {
    throw Error(fmt::format(
        "stream run: --inputs {}: a stream program has one input, the folder has {} .npy files",
        dir, files.size()));
  }
  return files;
}

std::vector<Tensor> input_items(const StreamCommandOptions& o, const Graph* graph) {
  if (o.inputs.empty() == o.inputs_dir.empty()) {
    throw Error("stream run: give the inputs either as --input NAME=FILE.npy or as --inputs DIR");
  }
  std::map<std::string, std::string> files;
  if (!o.inputs_dir.empty()) files = files_in(o.inputs_dir, graph);
  for (const auto& [name, file] : input_file_specs(o.inputs)) files[name] = file;
  std::vector<std::vector<Tensor>> per_input;
  if (graph) {
    for (ValueId id : graph->inputs()) {
      const std::string& name = graph->value(id).name;
      const auto it = files.find(name);
      if (it == files.end()) {
        throw Error(fmt::format("stream run: {}: no --input {}=FILE.npy for graph input \"{}\"",
                                o.program, name, name));
      }
      per_input.push_back(items_of(it->second));
    }
  } else {
    if (files.size() != 1) {
      throw Error("stream run: give the program's input once, as --input NAME=FILE.npy");
    }
    per_input.push_back(items_of(files.begin()->second));
  }
  const int64_t available = static_cast<int64_t>(per_input[0].size());
  const int64_t count = o.items > 0 ? o.items : available;
  std::vector<Tensor> items;
  items.reserve(static_cast<std::size_t>(count) * per_input.size());
  for (int64_t i = 0; i < count; ++i) {
    for (const auto& input : per_input) items.push_back(input[i % input.size()]);
  }
  return items;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// Seconds of one firing per actor, by --costs: "measured" leaves it to the executor (it fires
// each model filter before the run); "flops" charges a nominal 1 ns per FLOP; a cost table
// ("profile", "static", "analytical") sums its nodes' 1-thread seconds over the filter's
// model (the whole model's table, when the stages were cut by it). Splitters, joiners and
// built-in filters move pointers: 0.1 us per item they pop.
std::vector<double> firing_costs(const Loaded& loaded, const StreamProgram& program,
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
        const CostTable table = costs_for(g, source, 1, false);
        for (NodeId id : g.node_ids()) it->second += table.seconds(id, 1);
      }
    }
    seconds.push_back(it->second);
  }
  return seconds;
}

// --trace FILE: every firing as a Chrome trace event, one row per worker.
void write_trace(const std::string& file, const StreamProgram& program, const StreamRunResult& r) {
  const StreamGraph graph = flatten_stream(program.root);
  nlohmann::json events = nlohmann::json::array();
  for (const StreamRunResult::Firing& f : r.firings) {
    events.push_back({{"name", graph.nodes[f.node].name},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", f.worker},
                      {"ts", f.start * 1e6},
                      {"dur", (f.end - f.start) * 1e6}});
  }
  write_file_atomically(file, nlohmann::json{{"traceEvents", events}}.dump());
}

int run_run(const StreamCommandOptions& o) {
  // Outputs checked before the work; output.npy joins the folder only once it is complete.
  std::optional<AtomicFolder> output_folder;
  if (!o.output_dir.empty()) {
    std::vector<std::string> read = {o.program};
    for (const std::string& spec : o.inputs) read.push_back(spec.substr(spec.find('=') + 1));
    output_folder.emplace(o.output_dir, FolderRules{FolderRules::Existing::kMerge, read});
  }
  if (!o.trace.empty()) require_file_target(o.trace);
  const Loaded loaded = load_program_or_model(o.program, o.by_reference, o.stages, o.costs);
  StreamProgram program = loaded.program;
  for (const FissionSpec& spec : parse_fission_specs(o.fission)) {
    apply_fission(program.root, spec, program.origin);
  }
  if (!o.fission.empty()) verify_stream(program.root, program.origin);
  const std::vector<Tensor> inputs = input_items(o, loaded.graph.get());
  StreamRunOptions options;
  options.mixed_items = loaded.graph != nullptr;
  options.keep_outputs = !o.output_dir.empty();
  options.workers = o.workers;
  options.capacity_factor = o.capacity_factor;
  options.method = parse_placement_method(o.placement);
  options.firing_seconds = firing_costs(loaded, program, o.costs);
  options.trace = !o.trace.empty();
  const StreamRunResult r = run_stream(program, inputs, options);
  if (!o.trace.empty()) write_trace(o.trace, program, r);
  if (output_folder) {
    if (!r.outputs.empty()) {
      std::vector<int64_t> shape = r.outputs[0].shape();
      shape.insert(shape.begin(), static_cast<int64_t>(r.outputs.size()));
      Tensor all = Tensor::allocate(r.outputs[0].dtype(), shape);
      auto* dst = static_cast<std::byte*>(all.raw());
      for (const Tensor& t : r.outputs) {
        std::memcpy(dst, t.raw(), t.byte_size());
        dst += t.byte_size();
      }
      write_npy(output_folder->staging_path("output.npy"), all);
    }
    output_folder->commit();
  }
  const double p50 = percentile(r.iteration_latency, 0.5);
  const double p99 = percentile(r.iteration_latency, 0.99);
  const StreamGraph graph = flatten_stream(program.root);
  if (o.json) {
    nlohmann::ordered_json actors = nlohmann::ordered_json::array();
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      actors.push_back({{"name", graph.nodes[v].name},
                        {"worker", r.placement[v]},
                        {"seconds_per_iteration", r.node_cost[v]}});
    }
    nlohmann::ordered_json j = {{"items", inputs.size()},
                                {"outputs", r.output_count},
                                {"workers", o.workers},
                                {"seconds", r.seconds},
                                {"items_per_second", r.items_per_second},
                                {"predicted_items_per_second", r.predicted_items_per_second},
                                {"bound_items_per_second", r.plan.bound_items_per_second},
                                {"latency_p50_seconds", p50},
                                {"latency_p99_seconds", p99},
                                {"worker_busy", r.worker_busy},
                                {"worker_cpu_seconds", r.worker_cpu_seconds},
                                {"worker_wait_seconds", r.worker_wait_seconds},
                                {"worker_waits", r.worker_waits},
                                {"worker_preempted", r.worker_preempted},
                                {"placement",
                                 {{"method", o.placement},
                                  {"costs", o.costs},
                                  {"worker_seconds_per_iteration", r.plan.worker_seconds},
                                  {"handoff_seconds_per_iteration", r.plan.handoff_seconds},
                                  {"actors", actors}}}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}: {} items in, {} items out on {} workers in {:.4f} s\n", program.origin,
             inputs.size(), r.output_count, o.workers, r.seconds);
  fmt::print(
      "throughput {:.1f} items/s ({} placement by {} costs predicts {:.1f}; its busiest worker "
      "bounds it at {:.1f})\n",
      r.items_per_second, o.placement, o.costs, r.predicted_items_per_second,
      r.plan.bound_items_per_second);
  fmt::print("latency per iteration: p50 {:.3f} ms, p99 {:.3f} ms\n", p50 * 1e3, p99 * 1e3);
  for (std::size_t w = 0; w < r.worker_busy.size(); ++w) {
    std::vector<std::string> names;
    for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
      if (r.placement[v] == static_cast<int>(w)) names.push_back(graph.nodes[v].name);
    }
    fmt::print(
        "worker {}: busy {:.0f}%, cpu {:.4f} s, waited {:.4f} s ({} times), preempted {} times; "
        "planned {:.3f} ms per iteration: {}\n",
        w, 100 * r.worker_busy[w], r.worker_cpu_seconds[w], r.worker_wait_seconds[w],
        r.worker_waits[w], r.worker_preempted[w], 1e3 * r.plan.worker_seconds[w],
        fmt::join(names, " "));
  }
  return 0;
}

}  // namespace

void register_stream(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<StreamCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "stream",
      "Stream programs (StreamIt filters, pipelines, split-joins; docs/formats.md \"Stream "
      "programs\"): print one, or use the `schedule` and `run` subcommands");
  command->add_option("program", options->program,
                      "Stream program JSON file to print, or an ONNX model to convert to a "
                      "stream (prints its SSA instructions, the stream and the replication)");
  command->add_flag("--json", options->json, "Print the program as JSON");
  command->add_flag("--text", options->text, "Print the program as StreamIt-like text (default)");
  command->add_option("--dot", options->dot, "Also write the stream as Graphviz DOT to this file")
      ->check(path_given());
  command->add_option("--svg", options->svg, "Also render the stream as SVG to this file")
      ->check(path_given());
  command
      ->add_option("--stages", options->stages,
                   "Converting a model: cut it into K contiguous stages balanced by FLOPs, one "
                   "filter each, instead of one filter per node")
      ->check(CLI::Range(0, 1000000));
  command
      ->add_option("--costs", options->costs,
                   "With --stages: balance stages by flops (default) or by a cost table: "
                   "profile, static or analytical")
      ->check(CLI::IsMember({"flops", "profile", "static", "analytical"}));
  command->add_flag("--no-replicate", options->by_reference,
                    "Converting a model: keep a node that two split-joins share once and pass its "
                    "value by reference instead of replicating it");
  command->require_subcommand(0, 1);

  CLI::App* schedule = command->add_subcommand(
      "schedule",
      "Static schedule: steady-state repetitions from the balance equations, the init "
      "schedule that fills peek windows, channel buffer sizes, and the thesis's closed forms");
  schedule->add_option("program", options->program, "Stream program JSON file")->required();
  schedule->add_flag("--json", options->json,
                     "Print {\"repetitions\", \"init\", \"buffers\", ...} as JSON");
  schedule->callback([&action, options] { action = [options] { return run_schedule(*options); }; });

  CLI::App* run = command->add_subcommand(
      "run",
      "Stream items through a program on worker threads (stages and branches software-"
      "pipelined over bounded channels); reports throughput, latency and worker busy shares");
  run->add_option("program", options->program,
                  "Stream program JSON file, or an ONNX model (converted first)")
      ->required();
  run->add_option("--input", options->inputs,
                  "NAME=FILE.npy: the input items, one per entry of the leading axis (a model: "
                  "one per graph input)");
  run->add_option("--inputs", options->inputs_dir,
                  "DIR holding NAME.npy per graph input (a program: its one input file), "
                  "instead of --input");
  run->add_option("--items", options->items,
                  "How many items to feed (the file's items are repeated); default: all of them")
      ->check(integer_in(1, kMaxStreamItems));
  run->add_option("--workers", options->workers, "Worker threads")
      ->check(integer_in(1, kMaxWorkers))
      ->capture_default_str();
  run->add_option("--capacity-factor", options->capacity_factor,
                  "Channel capacity as a multiple of the schedule's buffer size")
      ->check(integer_in(1, kMaxCapacityFactor))
      ->capture_default_str();
  run->add_option("--output-dir", options->output_dir,
                  "Write the output items stacked as DIR/output.npy")
      ->check(path_given());
  run->add_option("--fission", options->fission,
                  "NAME=COPIES:GRANULARITY: split the row-wise model filter NAME into COPIES "
                  "round-robin copies of GRANULARITY rows each (repeatable)");
  run->add_flag("--json", options->json, "Print the report as JSON");
  run->add_option("--stages", options->stages,
                  "Converting a model: K contiguous stages balanced by FLOPs, one filter each")
      ->check(CLI::Range(0, 1000000));
  run->add_option("--costs", options->costs,
                  "What the placement (and --stages) balance: measured (default: each model "
                  "filter fired before the run; stages cut by FLOPs), flops (nominal 1 ns per "
                  "FLOP), or a cost table: profile, static or analytical")
      ->check(CLI::IsMember({"measured", "flops", "profile", "static", "analytical"}));
  run->add_option("--placement", options->placement,
                  "How filters are placed on the workers: balanced (default: steady-state cost "
                  "and channel hand-offs balanced, best simulated throughput), greedy (the old "
                  "longest-first, no hand-offs) or contiguous (runs of consecutive filters)")
      ->check(CLI::IsMember({"balanced", "greedy", "contiguous"}))
      ->capture_default_str();
  run->add_option("--trace", options->trace,
                  "Write every firing (worker, start, end) as a Chrome trace to this file")
      ->check(path_given());
  run->add_flag("--no-replicate", options->by_reference,
                "Converting a model: pass shared values by reference instead of replicating "
                "their nodes");
  run->callback([&action, options, run] {
    if (run->count("--costs") == 0) options->costs = "measured";
    action = [options] { return run_run(*options); };
  });

  command->callback([&action, options, command] {
    if (command->get_subcommands().empty()) {
      if (options->program.empty()) throw CLI::RequiredError("program");
      action = [options] { return run_print(*options); };
    }
  });
}

}  // namespace cleave::cli
