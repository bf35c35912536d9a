// `cleave run`'s driver: load, prepare, the timed runs, and the report of what they did.
#include "pipeline/model_run.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "frontend/layout_choice.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "machine/machine.h"
#include "pipeline/pipeline_run.h"
#include "pipeline/run_outputs.h"
#include "pipeline/run_report.h"
#include "pipeline/session.h"
#include "plan/simulator.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/npy.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "stream/stages.h"
#include "support/error.h"
#include "support/process_memory.h"
#include "support/timing.h"
#include "viz/gantt.h"

namespace cleave {

namespace {

const ModelPlan& plan_of(const ModelRun& run) {
  static const ModelPlan kNoPlan;
  return run.prepared().plan ? *run.prepared().plan : kNoPlan;
}

// The recipe of the run before its threads are fitted to the host.
RunRecipe recipe_for(const ModelRunSettings& settings) {
  RunRecipe recipe;
  if (settings.plan == "auto" || settings.plan == "pipeline") {
    recipe.strategy = settings.plan;
  } else {
    recipe.plan_file = settings.plan;
  }
  recipe.collect_stats = settings.stats;
  recipe.plain_layouts = settings.plain_layouts;
  recipe.layouts = settings.layouts;
  recipe.costs = settings.costs;
  recipe.workers = settings.workers;
  recipe.threads_per_worker = settings.threads_per_worker;
  recipe.samples = settings.samples;
  recipe.auto_check = !settings.no_auto_check;
  if (!settings.machine.empty()) {
    if (settings.plan != "auto")
      throw Error(
          fmt::format("--machine: needs --plan auto (a split is one of auto's "
                      "families), got {}",
                      settings.plan.empty() ? "no --plan" : "--plan " + settings.plan));
    recipe.machine = read_machine(settings.machine);
  }
  recipe.inputs = [&settings](const Graph& graph, int sample) {
    return model_run_inputs(graph, settings, settings.seed + static_cast<uint64_t>(sample));
  };
  return recipe;
}

// The warm-up runs, then the timed ones (milliseconds each); keeps the last run's outputs.
void time_runs(const ModelRunSettings& settings, ModelRun& run) {
  ExecutorInterface* executor = run.prepared().executor.get();
  const std::vector<SampleInputs>& sample_inputs = run.prepared().inputs;
  try {
    for (int i = 0; i < settings.warmup; ++i) run.outputs = executor->run(sample_inputs).front();
    if (settings.warmup > 0) executor->reset_stats();
    for (int i = 0; i < settings.repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      run.outputs = executor->run(sample_inputs).front();
      run.latencies.push_back(
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
}

// The plan the run ran, as every run reports it: the installed plan, or the pipeline's cut.
std::optional<RunPlanSummary> plan_summary(const ModelRun& run) {
  if (StageExecutor* pipeline = run.prepared().pipeline) {
    return RunPlanSummary{kPipelineStrategy, pipeline->workers(), pipeline->threads(),
                          pipeline->samples(),
                          pipeline_seconds(pipeline->staged(), pipeline->samples()) * 1e3};
  }
  if (!run.prepared().parallel) return std::nullopt;
  const ModelPlan& model_plan = plan_of(run);
  return RunPlanSummary{model_plan.plan.strategy, static_cast<int>(model_plan.tasks.machine.size()),
                        model_plan.threads_per_worker, run.prepared().parallel->samples(),
                        model_plan.plan.makespan * 1e3};
}

// What `run`'s plan report adds to the shared one: the threads it ran, the trace's makespan,
// what auto checked.
void add_plan_report(const ModelRun& run, nlohmann::json& plan) {
  ExecutorInterface* executor = run.prepared().executor.get();
  plan["traced_ms"] = executor->last_trace().makespan * 1e3;
  const ModelPlan& model_plan = plan_of(run);
  // Whether the profile behind the prediction was measured now, reused or made again.
  if (model_plan.plan.notes.contains("profile_cache"))
    plan["profile_cache"] = model_plan.plan.notes["profile_cache"];
  if (model_plan.plan.notes.contains("profile_level"))
    plan["profile_level"] = model_plan.plan.notes["profile_level"];
  if (StageExecutor* pipeline = run.prepared().pipeline) {
    plan["family"] = "pipeline";
    plan["configuration"] = pipeline_configuration(pipeline->stages(), pipeline->threads());
    plan["stages"] = pipeline->stages();
    return;
  }
  // A plan file names no family; auto's choice does (a spatial split among them).
  if (!model_plan.configuration.empty()) {
    plan["family"] = model_plan.family;
    plan["configuration"] = model_plan.configuration;
  }
  if (!model_plan.candidates.empty())
    plan["candidates"] = candidates_to_json(model_plan.candidates);
  ParallelExecutor* parallel = run.prepared().parallel;
  plan["threads"] = parallel->threads();
  plan["ran_threads_per_worker"] = parallel->threads_per_worker();
  if (run.prepared().predicted_with)
    plan["predicted_with_layouts"] = to_string(*run.prepared().predicted_with);
  if (const std::optional<AutoCheck>& auto_check = run.prepared().auto_check) {
    plan["auto_check"] = auto_check_json(*auto_check, model_plan.plan.strategy);
  }
}

// The run's last trace through the one Chrome-trace writer: a plan's tasks on its workers, or
// a pipeline's stage firings (one event each) on its workers.
void write_trace(const std::string& path, const ModelRun& run) {
  const Trace& trace = run.prepared().executor->last_trace();
  if (StageExecutor* pipeline = run.prepared().pipeline) {
    write_pipeline_trace(path, *pipeline);
  } else {
    write_file_atomically(path, chrome_trace_json(trace, plan_of(run).tasks, plan_of(run).plan));
  }
}

// --stats: time per op type and per op and implementation (sequential executor only).
void op_report(const ModelRun& run, ModelRunReport& out) {
  const Graph& graph = run.prepared().graph;
  const RunStats& stats = run.prepared().executor->stats();
  std::map<std::string, OpTime> by_op;
  for (NodeId id : graph.node_ids()) {
    OpTime& entry = by_op[graph.node(id).op_type];
    entry.op = graph.node(id).op_type;
    entry.seconds += stats.node_seconds[id] / stats.runs;
    ++entry.nodes;
  }
  for (auto& [op, entry] : by_op) out.op_times.push_back(entry);
  std::sort(out.op_times.begin(), out.op_times.end(),
            [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  nlohmann::json ops = nlohmann::json::array();
  for (const OpTime& entry : out.op_times) {
    ops.push_back({{"op", entry.op}, {"nodes", entry.nodes}, {"ms_per_run", entry.seconds * 1e3}});
  }
  out.json["ops"] = ops;
  // Which implementation runs each node, so that a slow one (oneDNN's "ref:") shows up;
  // kernels of cleave's own report none and are counted as "cleave".
  const std::vector<std::string> names = run.prepared().sequential->stats().implementations;
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
    out.implementation_times.push_back({key.first + " " + key.second, entry.seconds, entry.nodes});
  }
  out.json["implementations"] = implementations;
}

// How the run's threads read in the text report.
std::string threads_text(const ModelRunSettings& settings, const ModelRun& run,
                         const ModelRunReport& report) {
  const ModelPlan& model_plan = plan_of(run);
  ParallelExecutor* parallel = run.prepared().parallel;
  const HostLoad& host_load = run.host_load;
  if (StageExecutor* pipeline = run.prepared().pipeline)
    return "pipeline of " + pipeline_configuration(pipeline->stages(), pipeline->threads());
  return report.plan_fitted
             ? fmt::format(
                   "{} worker(s) x {} thread(s) on {} thread(s) x {} ({} other runnable "
                   "thread(s) on {} core(s); --fixed-threads keeps the plan's)",
                   model_plan.tasks.machine.size(), model_plan.threads_per_worker,
                   parallel->threads(), parallel->threads_per_worker(), host_load.other_runnable,
                   host_load.cores)
         : parallel ? fmt::format("{} worker(s) x {} thread(s)", model_plan.tasks.machine.size(),
                                  model_plan.threads_per_worker)
         : run.threads != settings.threads
             ? fmt::format(
                   "{} thread(s){} (asked for {}; {} other runnable thread(s) on {} "
                   "core(s); --fixed-threads keeps the count)",
                   run.threads,
                   run.claim_threads >= 2
                       ? fmt::format(", convolutions in parts claimed by {}", run.claim_threads)
                       : "",
                   settings.threads, host_load.other_runnable, host_load.cores)
             : fmt::format("{} thread(s)", run.threads);
}

}  // namespace

std::map<std::string, Tensor> model_run_inputs(const Graph& graph, const ModelRunSettings& settings,
                                               uint64_t seed) {
  std::map<std::string, Tensor> inputs;
  for (const auto& [name, file] : input_file_specs(settings.inputs)) inputs[name] = read_npy(file);
  std::map<std::string, Tensor> random = random_inputs(graph, seed);
  for (auto& [name, tensor] : random) {
    if (!inputs.count(name)) inputs[name] = std::move(tensor);
  }
  return inputs;
}

std::vector<std::string> files_read(const ModelRunSettings& settings) {
  std::vector<std::string> files = {settings.model, settings.plan, settings.machine};
  for (const std::string& spec : settings.inputs) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

ModelRun run_model_timed(const ModelRunSettings& settings) {
  ModelRun run;
  // Before the model is loaded: what the binary and its libraries cost, to compare runtimes fairly.
  run.baseline_rss = peak_rss_bytes();
  SessionOptions options;
  options.load.shapes = parse_input_shapes(settings.shapes);
  options.load.optimize = !settings.no_optimize;
  // A split's plan is for its partitioned.onnx with the runtime fusions put back.
  options.load.fuse_exported_forms = settings.no_optimize && settings.plan != "auto" &&
                                     settings.plan != "pipeline" && !settings.plan.empty() &&
                                     plan_fuses_exported_forms(settings.plan);
  if (settings.verbose)
    options.load.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  options.recipe = recipe_for(settings);
  options.recipe.log = options.load.log;
  options.recipe.release_packed_weights = true;
  options.max_prepared_shapes = 1;
  run.session = std::make_shared<Session>(settings.model, std::move(options));
  // Dims the model leaves symbolic are fixed by the --input files' shapes (or --shape).
  SampleInputs given;
  for (const auto& [name, file] : input_file_specs(settings.inputs)) given[name] = read_npy(file);
  const InputShapes shapes = run.session->shapes_of(given);
  given.clear();
  // A run takes only the cores other processes leave free (wait_policy.h), unless the user
  // fixed the counts (an MPI job's ranks share them: run_model_on_ranks). Sampled once the model
  // is read, not as the command starts: the programs started beside it (a shell pipeline's
  // `| python3 ...`) are then past their start-up.
  RunRecipe& recipe = run.session->recipe();
  run.threads = settings.threads;
  const bool adapt = !threads_fixed_by_user(settings.fixed_threads);
  if (adapt && (settings.threads > 1 || !settings.plan.empty())) {
    run.host_load = sample_lasting_host_load();
    if (settings.plan.empty()) {
      run.threads = threads_for(settings.threads, run.host_load);
      recipe.claim_threads = claim_threads_for(settings.threads, run.host_load);
    } else
      recipe.host_load = run.host_load;
  }
  recipe.threads = run.threads;
  run.claim_threads = recipe.claim_threads;
  run.shape = run.session->prepare(shapes);
  time_runs(settings, run);
  return run;
}

ModelRunReport model_run_report(const ModelRunSettings& settings, const ModelRun& run,
                                AtomicFolder* output_folder) {
  ModelRunReport out;
  const ModelPlan& model_plan = plan_of(run);
  ParallelExecutor* parallel = run.prepared().parallel;
  Executor* sequential = run.prepared().sequential;
  ExecutorInterface* executor = run.prepared().executor.get();
  const LayoutChoice& layouts = run.prepared().layouts;
  RunSummary summary;
  summary.model = settings.model;
  summary.latencies_ms = run.latencies;
  summary.layouts_family = to_string(layouts.family);
  summary.plan = plan_summary(run);
  if (summary.plan && !settings.trace_file.empty()) {
    write_trace(settings.trace_file, run);
    summary.trace_file = settings.trace_file;
  }
  std::string gantt_file;
  if (StageExecutor* pipeline = run.prepared().pipeline; pipeline && !settings.gantt_file.empty()) {
    write_pipeline_gantt(settings.gantt_file, *pipeline, "measured: " + settings.model);
    gantt_file = settings.gantt_file;
  }
  if (parallel && !settings.gantt_file.empty()) {
    Plan measured = measured_plan(model_plan.plan, executor->last_trace());
    write_gantt_svg(settings.gantt_file, measured, model_plan.tasks,
                    simulation_from_trace(executor->last_trace(), measured),
                    "measured: " + settings.model);
    gantt_file = settings.gantt_file;
  }
  summary.outputs = write_run_outputs(run.prepared().graph, run.outputs, output_folder);
  out.json = run_report_json(summary);
  nlohmann::json& report = out.json;
  if (!gantt_file.empty()) report["gantt_file"] = gantt_file;
  report["threads"] = run.threads;
  out.plan_fitted =
      parallel && (parallel->threads() != static_cast<int>(model_plan.tasks.machine.size()) ||
                   parallel->threads_per_worker() != model_plan.threads_per_worker);
  if (run.threads != settings.threads || out.plan_fitted) {
    if (run.threads != settings.threads) report["threads_requested"] = settings.threads;
    if (run.claim_threads >= 2) report["convolution_claim_threads"] = run.claim_threads;
    report["host_load"] = {{"other_runnable", run.host_load.other_runnable},
                           {"cores", run.host_load.cores}};
  }
  const RunStats& stats = executor->stats();
  report["peak_activation_bytes"] = stats.peak_activation_bytes;
  nlohmann::json fastest = nlohmann::json::object();
  for (const auto& [family, ms] : layouts.fastest_ms) fastest[to_string(family)] = ms;
  nlohmann::json relative = nlohmann::json::object();
  for (const auto& [family, ratio] : layouts.relative) relative[to_string(family)] = ratio;
  report["layouts"].update({{"measured", layouts.measured},
                            {"cached", layouts.cached},
                            {"fastest_ms", fastest},
                            {"relative_to_blocked", relative}});
  if (sequential) {
    report["concat_inputs_in_place"] = stats.concat_inputs_in_place;
    report["run_time_buffers"] = {{"made", stats.run_time_buffers_made},
                                  {"reused", stats.run_time_buffers_reused}};
  }
  report["released_weight_bytes"] = stats.released_weight_bytes;
  report["packed_weight_bytes"] = packed_constant_bytes();
  report["peak_rss_bytes"] = peak_rss_bytes();
  report["baseline_rss_bytes"] = run.baseline_rss;
  if (summary.plan) add_plan_report(run, report["plan"]);
  if (settings.stats && sequential) op_report(run, out);
  return out;
}

std::string model_run_text(const ModelRunSettings& settings, const ModelRun& run,
                           const ModelRunReport& out) {
  const nlohmann::json& report = out.json;
  const RunStats& stats = run.prepared().executor->stats();
  RunReportText text;
  text.threads = threads_text(settings, run, out);
  text.before_plan.push_back(
      fmt::format("memory     peak activations {:.2f} MiB, packed weights {:.1f} MiB, process "
                  "peak RSS {:.1f} MiB\n",
                  stats.peak_activation_bytes / 1048576.0,
                  report["packed_weight_bytes"].get<std::size_t>() / 1048576.0,
                  report["peak_rss_bytes"].get<std::size_t>() / 1048576.0));
  if (!settings.plain_layouts && layouts_can_differ(run.prepared().graph))
    text.before_plan.push_back(fmt::format("layouts    {}\n", describe(run.prepared().layouts)));
  if (report.contains("plan")) {
    const nlohmann::json& plan = report["plan"];
    text.plan_where =
        run.prepared().pipeline
            ? fmt::format("of {} on {} worker(s), {} sample(s)",
                          pipeline_configuration(plan["stages"].get<int>(),
                                                 plan["threads_per_worker"].get<int>()),
                          plan["workers"].get<int>(), plan["samples"].get<int>())
            : fmt::format("on {} worker(s) x {} thread(s), {} sample(s)",
                          plan["workers"].get<int>(), plan["threads_per_worker"].get<int>(),
                          plan["samples"].get<int>());
    text.plan_tail = fmt::format(", last run {:.3f} ms", plan["traced_ms"].get<double>());
    if (plan.contains("family"))
      text.after_plan.push_back(fmt::format("family     {} ({})\n",
                                            plan["family"].get<std::string>(),
                                            plan["configuration"].get<std::string>()));
  }
  if (const std::optional<AutoCheck>& auto_check = run.prepared().auto_check;
      auto_check && run.prepared().parallel) {
    text.after_plan.push_back("check      " + auto_check_text(*auto_check) + "\n");
  }
  if (settings.stats && run.prepared().sequential) {
    std::string lines = fmt::format(
        "in place   {} Concat input(s) written into the Concat's output from run 2 on\n",
        stats.concat_inputs_in_place);
    if (stats.run_time_buffers_made > 0) {
      lines += fmt::format(
          "run time   {} buffer(s) made for values shaped at run time, {} hand-out(s) of one "
          "again\n",
          stats.run_time_buffers_made, stats.run_time_buffers_reused);
    }
    lines += fmt::format("\n{:<24} {:>6} {:>12}\n", "op", "nodes", "ms per run");
    for (const OpTime& entry : out.op_times)
      lines += fmt::format("{:<24} {:>6} {:>12.3f}\n", entry.op, entry.nodes, entry.seconds * 1e3);
    lines += fmt::format("\n{:<48} {:>6} {:>12}\n", "op and implementation", "nodes", "ms per run");
    for (const OpTime& entry : out.implementation_times)
      lines += fmt::format("{:<48} {:>6} {:>12.3f}\n", entry.op, entry.nodes, entry.seconds * 1e3);
    text.after_outputs.push_back(lines);
  }
  return run_report_text(report, text);
}

}  // namespace cleave
