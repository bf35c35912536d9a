// `cleave run`: computes a model's outputs on this CPU, times it, and reports memory and ops.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include <sys/resource.h>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/option_limits.h"
#include "distributed/mpi_session.h"
#include "distributed/rank_run.h"
#include "ir/text.h"
#include "pipeline/layout_choice.h"
#include "pipeline/load.h"
#include "pipeline/model_plan.h"
#include "pipeline/plan_and_run.h"
#include "plan/simulator.h"
#include "runtime/executor.h"
#include "runtime/npy.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "runtime/wait_policy.h"
#include "support/atomic_output.h"
#include "support/timing.h"
#include "viz/gantt.h"

namespace cleave::cli {

namespace {

struct RunSettings {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::string output_dir;
  uint64_t seed = 0;
  int threads = 1;
  bool fixed_threads = false;
  int warmup = 0;
  int repeat = 1;
  bool stats = false;
  bool json = false;
  bool no_optimize = false;
  bool plain_layouts = false;
  std::string layouts = "auto";
  bool verbose = false;
  std::string plan;  // Empty: sequential executor.
  std::string costs = "profile";
  int workers = 2;
  int threads_per_worker = 1;
  int samples = 1;
  std::string trace_file;
  std::string gantt_file;
  bool no_auto_check = false;
  double rank_timeout = 60;
  bool read_whole_model = false;
  bool keep_loaded_weights = false;
};

// What a run reads (model, plan, --input files), so that no output replaces it.
std::vector<std::string> files_read(const RunSettings& settings) {
  std::vector<std::string> files = {settings.model, settings.plan};
  for (const std::string& spec : settings.inputs) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

std::map<std::string, Tensor> gather_inputs(const Graph& graph, const RunSettings& settings,
                                            uint64_t seed) {
  std::map<std::string, Tensor> inputs;
  for (const auto& [name, file] : input_file_specs(settings.inputs)) inputs[name] = read_npy(file);
  std::map<std::string, Tensor> random = random_inputs(graph, seed);
  for (auto& [name, tensor] : random) {
    if (!inputs.count(name)) inputs[name] = std::move(tensor);
  }
  return inputs;
}

// The process's resident-memory high-water mark so far; Linux reports it in KiB.
std::size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
}

// Under mpirun, each rank runs its worker's tasks of a plan file (src/distributed/).
int run_on_mpi_ranks(const RunSettings& settings) {
  if (settings.plan == "auto") throw Error("under mpirun, --plan takes a plan file, not auto");
  RankRunSettings ranks;
  ranks.model = settings.model;
  ranks.plan = settings.plan;
  ranks.shapes = settings.shapes;
  ranks.optimize = !settings.no_optimize;
  ranks.plain_layouts = settings.plain_layouts;
  ranks.layouts = settings.layouts;
  ranks.threads = settings.threads_per_worker;
  ranks.fixed_threads = threads_fixed_by_user(settings.fixed_threads);
  ranks.warmup = settings.warmup;
  ranks.repeat = settings.repeat;
  ranks.samples = settings.samples;
  ranks.json = settings.json;
  ranks.output_dir = settings.output_dir;
  ranks.files_read = files_read(settings);
  ranks.trace_file = settings.trace_file;
  ranks.rank_timeout_seconds = settings.rank_timeout;
  ranks.read_whole_model = settings.read_whole_model;
  ranks.keep_loaded_weights = settings.keep_loaded_weights;
  ranks.inputs = [&settings](const Graph& graph, int sample) {
    return gather_inputs(graph, settings, settings.seed + static_cast<uint64_t>(sample));
  };
  return run_on_ranks(ranks);
}

int run_model(const RunSettings& settings) {
  if (settings.repeat < 1) throw Error("--repeat must be at least 1");
  if (!settings.plan.empty() && launched_by_mpi()) return run_on_mpi_ranks(settings);
  // Refused before the model runs (a file in the way); filled and moved into place at the end.
  std::optional<AtomicFolder> output_folder;
  if (!settings.output_dir.empty())
    output_folder.emplace(settings.output_dir,
                          FolderRules{FolderRules::Existing::kMerge, files_read(settings)});
  for (const std::string& file : {settings.trace_file, settings.gantt_file})
    if (!file.empty()) require_file_target(file);
  // Before the model is loaded: what the binary and its libraries cost, to compare runtimes fairly.
  const std::size_t baseline_rss = peak_rss_bytes();
  LoadOptions load;
  load.shapes = parse_input_shapes(settings.shapes);
  load.optimize = !settings.no_optimize;
  if (settings.verbose)
    load.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  RunRecipe recipe;
  if (settings.plan == "auto") {
    recipe.strategy = "auto";
  } else {
    recipe.plan_file = settings.plan;
  }
  // A run takes only the cores other processes leave free (wait_policy.h), unless the user
  // fixed the counts (an MPI job's ranks share them: run_on_mpi_ranks).
  HostLoad host_load;
  int threads = settings.threads;
  const bool adapt = !threads_fixed_by_user(settings.fixed_threads);
  recipe.collect_stats = settings.stats;
  recipe.plain_layouts = settings.plain_layouts;
  recipe.layouts = settings.layouts;
  recipe.costs = settings.costs;
  recipe.workers = settings.workers;
  recipe.threads_per_worker = settings.threads_per_worker;
  recipe.samples = settings.samples;
  recipe.auto_check = !settings.no_auto_check;
  recipe.inputs = [&settings](const Graph& graph, int sample) {
    return gather_inputs(graph, settings, settings.seed + static_cast<uint64_t>(sample));
  };
  recipe.log = load.log;
  // Sampled once the model is read, not as the command starts: the programs started beside it
  // (a shell pipeline's `| python3 ...`) are then past their start-up.
  Graph loaded = load_model(settings.model, load);
  if (adapt && (settings.threads > 1 || !settings.plan.empty())) {
    host_load = sample_lasting_host_load();
    if (settings.plan.empty()) {
      threads = threads_for(settings.threads, host_load);
      recipe.claim_threads = claim_threads_for(settings.threads, host_load);
    } else
      recipe.host_load = host_load;
  }
  recipe.threads = threads;
  recipe.release_packed_weights = true;
  PreparedRun prepared = prepare_run(std::move(loaded), recipe);
  const Graph& graph = prepared.graph;
  ExecutorInterface* executor = prepared.executor.get();
  Executor* sequential = prepared.sequential;
  ParallelExecutor* parallel = prepared.parallel;
  const LayoutChoice& layouts = prepared.layouts;
  const std::vector<SampleInputs>& sample_inputs = prepared.inputs;
  const std::optional<AutoCheck>& auto_check = prepared.auto_check;
  static const ModelPlan kNoPlan;
  const ModelPlan& model_plan = prepared.plan ? *prepared.plan : kNoPlan;

  std::shared_ptr<ChromeTraceWriter> trace_writer;
  if (parallel && !settings.trace_file.empty()) {
    trace_writer = std::make_shared<ChromeTraceWriter>(model_plan.tasks, model_plan.plan);
    executor->add_observer(trace_writer);
  }
  std::vector<Tensor> outputs;
  std::vector<double> latencies;
  try {
    for (int i = 0; i < settings.warmup; ++i) outputs = executor->run(sample_inputs).front();
    if (settings.warmup > 0) executor->reset_stats();
    for (int i = 0; i < settings.repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      outputs = executor->run(sample_inputs).front();
      latencies.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  } catch (const UnsupportedError& e) {
    // A node's error (a shape that overflows, memory that runs out) names the node; the file
    // it belongs to is the model's.
    throw UnsupportedError(fmt::format("{}: {}", settings.model, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", settings.model, e.what()));
  }

  nlohmann::json report;
  report["model"] = settings.model;
  report["threads"] = threads;
  const bool plan_fitted =
      parallel && (parallel->threads() != static_cast<int>(model_plan.tasks.machine.size()) ||
                   parallel->threads_per_worker() != model_plan.threads_per_worker);
  if (threads != settings.threads || plan_fitted) {
    if (threads != settings.threads) report["threads_requested"] = settings.threads;
    if (recipe.claim_threads >= 2) report["convolution_claim_threads"] = recipe.claim_threads;
    report["host_load"] = {{"other_runnable", host_load.other_runnable},
                           {"cores", host_load.cores}};
  }
  report["latency_ms"] = {{"min", *std::min_element(latencies.begin(), latencies.end())},
                          {"median", median_of(latencies)},
                          {"runs", latencies}};
  const RunStats& stats = executor->stats();
  report["peak_activation_bytes"] = stats.peak_activation_bytes;
  report["isa"] = isa_json();
  nlohmann::json fastest = nlohmann::json::object();
  for (const auto& [family, ms] : layouts.fastest_ms) fastest[to_string(family)] = ms;
  nlohmann::json relative = nlohmann::json::object();
  for (const auto& [family, ratio] : layouts.relative) relative[to_string(family)] = ratio;
  report["layouts"] = {{"family", to_string(layouts.family)},
                       {"measured", layouts.measured},
                       {"cached", layouts.cached},
                       {"fastest_ms", fastest},
                       {"relative_to_blocked", relative}};
  if (sequential) report["concat_inputs_in_place"] = stats.concat_inputs_in_place;
  report["released_weight_bytes"] =
      sequential ? sequential->released_weight_bytes() : parallel->released_weight_bytes();
  report["peak_rss_bytes"] = peak_rss_bytes();
  report["baseline_rss_bytes"] = baseline_rss;
  if (parallel) {
    report["plan"] = {{"strategy", model_plan.plan.strategy},
                      {"workers", model_plan.tasks.machine.size()},
                      {"threads_per_worker", model_plan.threads_per_worker},
                      {"threads", parallel->threads()},
                      {"ran_threads_per_worker", parallel->threads_per_worker()},
                      {"samples", parallel->samples()},
                      {"predicted_ms", model_plan.plan.makespan * 1e3},
                      {"traced_ms", executor->last_trace().makespan * 1e3}};
    if (prepared.predicted_with)
      report["plan"]["predicted_with_layouts"] = to_string(*prepared.predicted_with);
    if (auto_check) {
      report["plan"]["auto_check"] = {{"candidate", auto_check->candidate},
                                      {"candidate_ms", auto_check->candidate_ms},
                                      {"sequential_ms", auto_check->sequential_ms},
                                      {"kept", model_plan.plan.strategy}};
    }
    if (trace_writer) {
      trace_writer->write(settings.trace_file);
      report["trace_file"] = settings.trace_file;
    }
    if (!settings.gantt_file.empty()) {
      Plan measured = measured_plan(model_plan.plan, executor->last_trace());
      write_gantt_svg(settings.gantt_file, measured, model_plan.tasks,
                      simulation_from_trace(executor->last_trace(), measured),
                      "measured: " + settings.model);
      report["gantt_file"] = settings.gantt_file;
    }
  }

  nlohmann::json output_list = nlohmann::json::array();
  std::set<std::string> file_names;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph.value(graph.outputs()[i]).name;
    nlohmann::json entry = {{"name", name}, {"type", outputs[i].describe()}};
    if (output_folder) {
      const std::string file_name = file_name_for(name) + ".npy";
      if (!file_names.insert(file_name).second) {
        throw Error(fmt::format("{}: two graph outputs would both be written as {} (output \"{}\")",
                                settings.output_dir, file_name, name));
      }
      write_npy(output_folder->staging_path(file_name), outputs[i]);
      entry["file"] = (std::filesystem::path(output_folder->path()) / file_name).string();
    }
    output_list.push_back(entry);
  }
  if (output_folder) output_folder->commit();
  report["outputs"] = output_list;

  struct OpTime {
    std::string op;
    double seconds = 0;
    int nodes = 0;
  };
  std::vector<OpTime> op_times;
  std::vector<OpTime> implementation_times;  // "op implementation" as the op.
  if (settings.stats && sequential) {
    std::map<std::string, OpTime> by_op;
    for (NodeId id : graph.node_ids()) {
      OpTime& entry = by_op[graph.node(id).op_type];
      entry.op = graph.node(id).op_type;
      entry.seconds += stats.node_seconds[id] / stats.runs;
      ++entry.nodes;
    }
    for (auto& [op, entry] : by_op) op_times.push_back(entry);
    std::sort(op_times.begin(), op_times.end(),
              [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
    nlohmann::json ops = nlohmann::json::array();
    for (const OpTime& entry : op_times) {
      ops.push_back(
          {{"op", entry.op}, {"nodes", entry.nodes}, {"ms_per_run", entry.seconds * 1e3}});
    }
    report["ops"] = ops;
    // Which implementation runs each node, so that a slow one (oneDNN's "ref:") shows up;
    // kernels of cleave's own report none and are counted as "cleave".
    const std::vector<std::string> names = sequential->implementations();
    std::map<std::pair<std::string, std::string>, OpTime> by_implementation;
    for (NodeId id : graph.node_ids()) {
      const std::string& name = names[id].empty() ? std::string("cleave") : names[id];
      OpTime& entry = by_implementation[{graph.node(id).op_type, name}];
      entry.op = graph.node(id).op_type;
      entry.seconds += stats.node_seconds[id] / stats.runs;
      ++entry.nodes;
    }
    nlohmann::json implementations = nlohmann::json::array();
    for (const auto& [key, entry] : by_implementation) {
      implementations.push_back({{"op", key.first},
                                 {"implementation", key.second},
                                 {"nodes", entry.nodes},
                                 {"ms_per_run", entry.seconds * 1e3}});
      implementation_times.push_back({key.first + " " + key.second, entry.seconds, entry.nodes});
    }
    report["implementations"] = implementations;
  }

  if (settings.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("model      {}\n", settings.model);
  const std::string threads_text =
      plan_fitted
          ? fmt::format(
                "{} worker(s) x {} thread(s) on {} thread(s) x {} ({} other runnable thread(s) "
                "on {} core(s); --fixed-threads keeps the plan's)",
                model_plan.tasks.machine.size(), model_plan.threads_per_worker, parallel->threads(),
                parallel->threads_per_worker(), host_load.other_runnable, host_load.cores)
      : parallel ? fmt::format("{} worker(s) x {} thread(s)", model_plan.tasks.machine.size(),
                               model_plan.threads_per_worker)
      : threads != settings.threads
          ? fmt::format(
                "{} thread(s){} (asked for {}; {} other runnable thread(s) on {} "
                "core(s); --fixed-threads keeps the count)",
                threads,
                recipe.claim_threads >= 2
                    ? fmt::format(", convolutions in parts claimed by {}", recipe.claim_threads)
                    : "",
                settings.threads, host_load.other_runnable, host_load.cores)
          : fmt::format("{} thread(s)", threads);
  fmt::print("latency    min {:.3f} ms, median {:.3f} ms over {} run(s), {}\n",
             report["latency_ms"]["min"].get<double>(),
             report["latency_ms"]["median"].get<double>(), settings.repeat, threads_text);
  fmt::print("memory     peak activations {:.2f} MiB, process peak RSS {:.1f} MiB\n",
             stats.peak_activation_bytes / 1048576.0,
             report["peak_rss_bytes"].get<std::size_t>() / 1048576.0);
  if (!settings.plain_layouts && layouts_can_differ(graph))
    fmt::print("layouts    {}\n", describe(layouts));
  if (parallel) {
    fmt::print(
        "plan       {} on {} worker(s) x {} thread(s), {} sample(s): predicted {:.3f} ms, last run "
        "{:.3f} ms\n",
        model_plan.plan.strategy, model_plan.tasks.machine.size(), model_plan.threads_per_worker,
        parallel->samples(), model_plan.plan.makespan * 1e3, executor->last_trace().makespan * 1e3);
    if (auto_check) {
      fmt::print("check      timed {} at {:.3f} ms against sequential at {:.3f} ms: kept {}\n",
                 auto_check->candidate, auto_check->candidate_ms, auto_check->sequential_ms,
                 model_plan.plan.strategy);
    }
    if (!settings.trace_file.empty()) fmt::print("trace      {}\n", settings.trace_file);
    if (!settings.gantt_file.empty()) fmt::print("gantt      {}\n", settings.gantt_file);
  }
  for (const auto& entry : output_list) {
    fmt::print("output     {} {}{}\n", entry["name"].get<std::string>(),
               entry["type"].get<std::string>(),
               entry.contains("file") ? " -> " + entry["file"].get<std::string>() : "");
  }
  if (settings.stats && sequential) {
    fmt::print("in place   {} Concat input(s) written into the Concat's output from run 2 on\n",
               stats.concat_inputs_in_place);
    fmt::print("\n{:<24} {:>6} {:>12}\n", "op", "nodes", "ms per run");
    for (const OpTime& entry : op_times)
      fmt::print("{:<24} {:>6} {:>12.3f}\n", entry.op, entry.nodes, entry.seconds * 1e3);
    fmt::print("\n{:<48} {:>6} {:>12}\n", "op and implementation", "nodes", "ms per run");
    for (const OpTime& entry : implementation_times)
      fmt::print("{:<48} {:>6} {:>12.3f}\n", entry.op, entry.nodes, entry.seconds * 1e3);
  }
  return 0;
}

}  // namespace

void register_run(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<RunSettings>();
  CLI::App* command =
      app.add_subcommand("run", "Compute a model's outputs on this CPU and time it");
  command->add_option("model", settings->model, "ONNX model file")->required();
  command->add_option(
      "--input", settings->inputs,
      "name=file.npy for a graph input (repeatable); others get seeded random values");
  command->add_option("--shape", settings->shapes,
                      "name=d0,d1,... fixes an input's symbolic dims (repeatable)");
  command
      ->add_option("--output-dir", settings->output_dir,
                   "Write every graph output as DIR/<name>.npy")
      ->check(path_given());
  command->add_option("--seed", settings->seed, "Seed of the random inputs")->default_val(0);
  command
      ->add_option("--threads", settings->threads,
                   "Intra-op threads; without --plan, no more than the cores other processes "
                   "leave free when the run starts (at least 1)")
      ->default_val(1)
      ->check(thread_count());
  command->add_flag("--fixed-threads", settings->fixed_threads,
                    "Use --threads (or the plan's workers and threads) as given even when other "
                    "processes hold the cores (also: CLEAVE_FIXED_THREADS set)");
  command->add_option("--warmup", settings->warmup, "Untimed runs first")
      ->default_val(0)
      ->check(integer_in(0, kMaxRounds));
  command->add_option("--repeat", settings->repeat, "Timed runs")
      ->default_val(1)
      ->check(integer_in(1, kMaxRounds));
  command->add_flag("--stats", settings->stats,
                    "Report time per op type, and per op and implementation");
  command->add_flag("--json", settings->json, "Print the report as JSON");
  command->add_flag("--no-optimize", settings->no_optimize, "Skip the graph passes");
  command->add_flag("--plain-layouts", settings->plain_layouts,
                    "Keep every tensor in plain layout (no oneDNN blocking)");
  command
      ->add_option("--layouts", settings->layouts,
                   "Convolution family: auto (time each once per model and thread count, "
                   "cached), blocked (channel blocks: 16 on AVX-512, 8 on AVX2), winograd "
                   "(blocks, 3x3 stride-1 convolutions by Winograd) or channels-last")
      ->check(CLI::IsMember({"auto", "blocked", "winograd", "channels-last"}))
      ->default_val("auto");
  command->add_flag("-v,--verbose", settings->verbose, "Log each loading step");
  command->add_option("--plan", settings->plan,
                      "Run a plan in parallel: a plan.json from `cleave plan`, or auto");
  command
      ->add_option("--costs", settings->costs,
                   "Costs for --plan auto: profile, static or analytical")
      ->check(CLI::IsMember({"profile", "static", "analytical"}))
      ->default_val("profile");
  command->add_option("--workers", settings->workers, "Workers for --plan auto")
      ->default_val(2)
      ->check(integer_in(1, kMaxWorkers));
  command
      ->add_option("--threads-per-worker", settings->threads_per_worker,
                   "Intra-op threads per worker for --plan auto")
      ->default_val(1)
      ->check(thread_count());
  command
      ->add_option("--samples", settings->samples,
                   "Samples in flight for --plan auto (hyperclustering); under mpirun, inputs "
                   "pushed through the ranks per repeat (a pipelined stream)")
      ->default_val(1)
      ->check(CLI::Range(1, 4096));
  command->add_flag("--no-auto-check", settings->no_auto_check,
                    "Keep --plan auto's predicted choice even when it is parallel (by default a "
                    "few timed runs against the sequential plan decide)");
  command
      ->add_option("--rank-timeout", settings->rank_timeout,
                   "Under mpirun: seconds a rank waits for a message or a peer before every rank "
                   "stops")
      ->default_val(60)
      ->check(timeout_seconds());
  command->add_flag("--read-whole-model", settings->read_whole_model,
                    "Under mpirun: every rank reads the whole model, then drops other ranks' "
                    "weights (by default, with --no-optimize, each reads only its own; for "
                    "measuring what that saves)");
  command->add_flag("--keep-loaded-weights", settings->keep_loaded_weights,
                    "Under mpirun: keep each weight as loaded after the kernels packed their "
                    "copy (by default it is freed; for measuring what that saves)");
  command
      ->add_option("--trace", settings->trace_file,
                   "Write the last parallel run as Chrome-trace JSON")
      ->check(path_given());
  command->add_option("--gantt", settings->gantt_file, "Write the last parallel run as a Gantt SVG")
      ->check(path_given());
  command->callback([settings, &action] { action = [settings] { return run_model(*settings); }; });
}

}  // namespace cleave::cli
