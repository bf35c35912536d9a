// Every rank's `cleave run --plan`: a Session prepares, the ranks agree, run pipelined, report.
#include "pipeline/rank_run.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "distributed/fault_injection.h"
#include "distributed/mpi_session.h"
#include "distributed/rank_part.h"
#include "distributed/rank_sync.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "pipeline/run_outputs.h"
#include "pipeline/run_report.h"
#include "pipeline/session.h"
#include "pipeline/spatial_run.h"
#include "runtime/trace.h"
#include "support/atomic_output.h"
#include "support/limits.h"
#include "support/timing.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// Everything a rank needs, made before the ranks agree to start: the model held by a Session,
// whose prepare reads the plan and makes this rank's executor through its RankPart.
struct Prepared {
  std::unique_ptr<RankPart> part;
  std::unique_ptr<Session> session;
  std::shared_ptr<PreparedShape> shape;
  std::vector<SampleInputs> inputs;  // One stream (empty samples on ranks other than 0).

  const PreparedRun& run() const { return shape->run; }
  const ModelPlan& plan() const { return *shape->run.plan; }
  ExecutorInterface& executor() const { return *shape->run.executor; }
};

SessionOptions session_options(const RankRunSettings& settings, const MpiSession& mpi,
                               RankPart& part, const RankCandidate* candidate) {
  SessionOptions options;
  options.load.shapes = parse_input_shapes(settings.shapes);
  options.load.optimize = settings.optimize;
  options.load.fuse_exported_forms = settings.fuse_exported_forms;
  // A model loaded as it is (no passes rewrite its weights) need not be read whole: its weights,
  // external or embedded, stay on disk until this rank knows which of them its tasks read. A
  // split is made of the whole model (its slices read the weights).
  const bool split = candidate && !candidate->split.is_null();
  if (!settings.optimize && options.load.shapes.empty() && !settings.read_whole_model && !split)
    options.load.unread_external = part.unread_weights();
  if (mpi.rank() == 0) options.load.log = settings.log;
  RunRecipe& recipe = options.recipe;
  // A candidate of --plan auto comes as JSON; its name only names it in errors.
  recipe.plan_file = candidate ? fmt::format("--plan auto's {} ({}, sent by rank 0)",
                                             candidate->role, candidate->configuration)
                               : settings.plan;
  recipe.plain_layouts = settings.plain_layouts;
  recipe.layouts = settings.layouts;  // auto: no rank can time the model on its own weights.
  recipe.log = options.load.log;
  recipe.plan_runner = PlanRunner{
      [&part](const Graph& graph, const std::string& file) { return part.read_plan(graph, file); },
      [&part](Graph& graph, const ModelPlan& plan, const LayoutChoice& layouts) {
        return part.make_executor(graph, plan, layouts.family);
      },
      nullptr};
  // A split runs over its partitioned graph, which each rank makes of the model it loaded,
  // then runs its part of as of any plan (as `run-split` runs a split folder's).
  if (split) {
    recipe.plan_runner->graph_to_run = [candidate](Graph loaded) {
      return candidate_graph(std::move(loaded), *candidate);
    };
  }
  options.max_prepared_shapes = 1;
  return options;
}

// Rank 0's outputs are checked first, so a bad target stops every rank before any work.
void check_targets(const RankRunSettings& settings, const MpiSession& mpi,
                   std::optional<AtomicFolder>& output_folder) {
  if (mpi.rank() != 0) return;
  if (!settings.output_dir.empty())
    output_folder.emplace(settings.output_dir,
                          FolderRules{FolderRules::Existing::kMerge, settings.files_read});
  if (!settings.trace_file.empty()) require_file_target(settings.trace_file);
}

// This rank's part of the plan file, or of a candidate of --plan auto.
void prepare(const RankRunSettings& settings, const MpiSession& mpi, Prepared& prepared,
             const RankCandidate* candidate) {
  RankPartOptions part;
  part.threads = settings.threads;
  part.fixed_threads = settings.fixed_threads;
  part.rank_timeout_seconds = settings.rank_timeout_seconds;
  part.blocked_layouts = !settings.plain_layouts;
  part.release_packed_weights = !settings.keep_loaded_weights;
  part.loaded = settings.loaded;
  if (candidate) part.plan_json = candidate->plan;
  prepared.part = std::make_unique<RankPart>(std::move(part), mpi);
  if (settings.before_load) settings.before_load(mpi.size());
  prepared.session = std::make_unique<Session>(
      settings.model, session_options(settings, mpi, *prepared.part, candidate));
  prepared.shape = prepared.session->prepare({});
  const int per_run = prepared.executor().samples();
  if (settings.samples % per_run != 0) {
    throw Error(fmt::format("--samples {}: the plan runs {} samples at a time; give a multiple",
                            settings.samples, per_run));
  }
  prepared.inputs.resize(static_cast<std::size_t>(settings.samples));
  if (mpi.rank() == 0) {
    for (int sample = 0; sample < settings.samples; ++sample)
      prepared.inputs[sample] = settings.inputs(prepared.run().graph, sample);
  }
}

// Where the kernels' family came from, for the report: option (--layouts), plan, or default.
std::string layouts_from(const RankRunSettings& settings, const ModelPlan& plan) {
  if (settings.plain_layouts || settings.layouts != "auto") return "option";
  return plan.convolution_family ? "plan" : "default";
}

// Through the one Chrome-trace writer: each rank a process row, its tasks on it.
void write_rank_trace(const std::string& path, std::vector<Trace::Event> events,
                      const TaskGraph& tasks, int ranks) {
  Trace trace;
  trace.events = std::move(events);
  std::vector<std::string> task_names;
  for (const Task& task : tasks.tasks) task_names.push_back(task.name);
  std::vector<std::string> rank_names;
  for (int rank = 0; rank < ranks; ++rank) rank_names.push_back(fmt::format("rank {}", rank));
  write_chrome_trace(path, trace, task_names, rank_names, TraceRows::processes);
}

// The warm-up and timed runs, each started together on every rank; a run's error stops them
// all. Returns the milliseconds of the timed runs; `origin` gets the last run's start (seconds
// of the steady clock, a few microseconds before the executor's own zero of its trace).
std::vector<double> timed_runs(const RankRunSettings& settings, const MpiSession& mpi,
                               Prepared& prepared, std::vector<std::vector<Tensor>>& results,
                               double& origin) {
  ExecutorInterface& executor = prepared.executor();
  std::vector<double> latencies;
  try {
    for (int i = 0; i < settings.warmup + settings.repeat; ++i) {
      barrier(mpi, settings.rank_timeout_seconds, "every rank to start the next repeat");
      auto start = Clock::now();
      origin = std::chrono::duration<double>(start.time_since_epoch()).count();
      results = executor.run(prepared.inputs);
      // The figures each rank reports (emulated pauses per run) are the timed runs'.
      if (i + 1 == settings.warmup) executor.reset_stats();
      if (i >= settings.warmup)
        latencies.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  } catch (const std::exception& e) {
    abort_ranks(mpi.comm(), mpi.rank(), e.what());
  }
  return latencies;
}

// What this rank reports to rank 0.
RankFigures rank_figures(const MpiSession& mpi, const Prepared& prepared) {
  const RunStats& mine = prepared.executor().stats();
  RankFigures figures;
  figures.tasks = mine.tasks;
  figures.weight_bytes = static_cast<double>(mine.weight_bytes);
  figures.bytes_sent = mine.bytes_sent;
  figures.bytes_received = mine.bytes_received;
  figures.messages_sent = static_cast<double>(mine.messages_sent);
  figures.messages_received = static_cast<double>(mine.messages_received);
  figures.peak_activation_bytes = static_cast<double>(mine.peak_activation_bytes);
  figures.peak_rss_bytes = static_cast<double>(peak_rss_bytes());
  figures.traced_seconds = prepared.executor().last_trace().makespan;
  figures.released_weight_bytes = static_cast<double>(mine.released_weight_bytes);
  figures.threads = prepared.part->threads().threads;
  figures.concat_inputs_in_place = mine.concat_inputs_in_place;
  figures.emulated_speed = mine.emulated_speed;
  figures.values_received_in_place = mine.values_received_in_place;
  figures.received_bytes_copied = mine.received_bytes_copied;
  figures.emulated_pause_seconds =
      mine.emulated_pause_seconds / static_cast<double>(std::max<int64_t>(1, mine.runs));
  figures.host_other_runnable =
      prepared.part->threads().sampled ? prepared.part->threads().host_load.other_runnable : -1;
  std::strncpy(figures.host, mpi.host().c_str(), sizeof figures.host - 1);
  return figures;
}

// Rank 0's report of the run: the shared fields (outputs and trace file written by now), then
// the ranks' own.
nlohmann::json run_report(const RankRunSettings& settings, const MpiSession& mpi,
                          const Prepared& prepared, const std::vector<double>& latencies,
                          const std::vector<RankFigures>& all, nlohmann::json outputs,
                          const RankCandidate* candidate, const std::optional<AutoCheck>& check,
                          const std::vector<RankCandidate>& dropped) {
  RunSummary summary;
  summary.model = settings.model;
  summary.latencies_ms = latencies;
  summary.layouts_family =
      settings.plain_layouts ? "plain" : to_string(prepared.run().layouts.family);
  summary.plan = RunPlanSummary{prepared.plan().plan.strategy,
                                static_cast<int>(prepared.plan().plan.order.size()),
                                prepared.plan().threads_per_worker, prepared.executor().samples(),
                                prepared.plan().plan.makespan * 1e3};
  summary.outputs = std::move(outputs);
  summary.trace_file = settings.trace_file;
  nlohmann::json report = run_report_json(summary);
  report["ranks"] = mpi.size();
  report["threads_per_rank"] = prepared.part->threads().threads;
  report["threads_requested"] = settings.threads;
  report["plan"]["file"] = settings.plan;
  report["plan"]["samples_per_run"] = prepared.executor().samples();
  if (candidate) {  // --plan auto: what ran, and the table it came from (as rank 0 sent it)
    report["plan"]["family"] = prepared.plan().family;
    report["plan"]["configuration"] = prepared.plan().configuration;
    report["plan"]["candidates"] = candidate->plan.value("candidates", nlohmann::json::array());
  }
  if (check) report["plan"]["auto_check"] = auto_check_json(*check, prepared.plan().plan.strategy);
  if (!dropped.empty()) {  // Candidates rank 0 did not send for want of memory.
    nlohmann::json& checked = report["plan"]["auto_check"];
    if (!check) {
      checked = {{"timed", false},
                 {"kept", prepared.plan().plan.strategy},
                 {"kept_configuration", prepared.plan().configuration}};
    }
    checked["dropped"] = nlohmann::json::array();
    for (const RankCandidate& one : dropped) {
      checked["dropped"].push_back(
          {{"role", one.role}, {"configuration", one.configuration}, {"why", one.dropped}});
    }
  }
  const double median = report["latency_ms"]["median"].get<double>();
  report["layouts"]["from"] = layouts_from(settings, prepared.plan());
  report["samples"] = settings.samples;
  report["throughput_samples_per_s"] = settings.samples / (median / 1e3);
  std::vector<double> per_sample;
  for (double seconds : prepared.executor().stats().sample_seconds)
    per_sample.push_back(seconds * 1e3);
  report["sample_latency_ms"] = {
      {"median", median_of(per_sample)},
      {"max", per_sample.empty() ? 0.0 : *std::max_element(per_sample.begin(), per_sample.end())},
      {"per_sample", per_sample}};
  report["model_weight_bytes"] = prepared.part->model_weight_bytes();
  report["weights_read"] =
      prepared.part->weights_left_unread() ? "own tasks' only" : "whole model, then dropped";
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < mpi.size(); ++r) {
    const RankFigures& f = all[static_cast<std::size_t>(r)];
    ranks.push_back(
        {{"rank", r},
         {"host", std::string(f.host, strnlen(f.host, sizeof f.host))},
         {"tasks", f.tasks},
         {"weight_bytes", f.weight_bytes},
         {"released_weight_bytes", f.released_weight_bytes},
         {"bytes_sent", f.bytes_sent},
         {"bytes_received", f.bytes_received},
         {"messages_sent", f.messages_sent},
         {"messages_received", f.messages_received},
         {"peak_activation_bytes", f.peak_activation_bytes},
         {"peak_rss_bytes", f.peak_rss_bytes},
         {"traced_ms", f.traced_seconds * 1e3},
         {"threads", f.threads},
         {"concat_inputs_in_place", f.concat_inputs_in_place},
         {"values_received_in_place_per_run", f.values_received_in_place},
         {"received_bytes_copied_per_run", f.received_bytes_copied},
         {"emulated_speed", f.emulated_speed},
         {"emulated_pause_ms_per_run", f.emulated_pause_seconds * 1e3},
         {"host_other_runnable",
          f.host_other_runnable < 0 ? nlohmann::json() : nlohmann::json(f.host_other_runnable)}});
  }
  report["per_rank"] = ranks;
  return report;
}

// The text form of rank 0's report.
void print_report(const RankRunSettings& settings, const RankRunResult& result) {
  const nlohmann::json& report = result.report;
  RunReportText text;
  text.threads = fmt::format("{} rank(s) x {} thread(s)", report["ranks"].get<int>(),
                             report["threads_per_rank"].get<int>());
  if (!result.threads_line.empty()) text.before_plan.push_back(result.threads_line + "\n");
  text.before_plan.push_back(fmt::format(
      "stream     {} sample(s): {:.1f} samples/s, per-sample latency median {:.3f} ms\n",
      settings.samples, report["throughput_samples_per_s"].get<double>(),
      report["sample_latency_ms"]["median"].get<double>()));
  text.plan_where = fmt::format("on {} rank(s)", report["ranks"].get<int>());
  const std::string from = report["layouts"]["from"].get<std::string>();
  text.after_plan.push_back(
      fmt::format("layouts    {} ({})\n", report["layouts"]["family"].get<std::string>(),
                  from == "plan"     ? "the family the plan's costs were profiled in"
                  : from == "option" ? "as asked"
                                     : "the default: the plan names no family"));
  if (report["plan"].contains("family")) {
    text.after_plan.push_back(fmt::format("family     {} ({})\n",
                                          report["plan"]["family"].get<std::string>(),
                                          report["plan"]["configuration"].get<std::string>()));
  }
  if (result.auto_check)
    text.after_plan.push_back("check      " + auto_check_text(*result.auto_check) + "\n");
  if (report["plan"].contains("auto_check") && report["plan"]["auto_check"].contains("dropped")) {
    for (const auto& one : report["plan"]["auto_check"]["dropped"]) {
      text.after_plan.push_back(
          fmt::format("dropped    {} {}: {}\n", one["role"].get<std::string>(),
                      one["configuration"].get<std::string>(), one["why"].get<std::string>()));
    }
  }
  text.after_plan.push_back(fmt::format("weights    {:.2f} MiB in the model; ranks read {}\n",
                                        report["model_weight_bytes"].get<double>() / 1048576.0,
                                        report["weights_read"].get<std::string>()));
  for (const auto& entry : report["per_rank"]) {
    text.after_plan.push_back(fmt::format(
        "rank {:<5} {} tasks, weights {:.2f} MiB ({:.2f} freed once packed), sent {:.2f} MiB in "
        "{} messages, peak RSS {:.1f} MiB\n",
        entry["rank"].get<int>(), entry["tasks"].get<double>(),
        entry["weight_bytes"].get<double>() / 1048576.0,
        entry["released_weight_bytes"].get<double>() / 1048576.0,
        entry["bytes_sent"].get<double>() / 1048576.0, entry["messages_sent"].get<double>(),
        entry["peak_rss_bytes"].get<double>() / 1048576.0));
  }
  fmt::print("{}", run_report_text(report, text));
}

// --plan auto: rank 0 checks its targets, loads the model whole and plans the candidates;
// every rank learns them, or rank 0's refusal (then nullopt, said on every rank). The others
// wait for the planning beyond the rank timeout (a profile, the planners' searches).
std::optional<std::vector<RankCandidate>> share_candidates(
    const RankRunSettings& settings, const MpiSession& mpi,
    std::optional<AtomicFolder>& output_folder) {
  std::string failure;
  std::string text;
  if (mpi.rank() == 0) {
    try {
      check_targets(settings, mpi, output_folder);
      LoadOptions load;
      load.shapes = parse_input_shapes(settings.shapes);
      load.optimize = settings.optimize;
      load.fuse_exported_forms = settings.fuse_exported_forms;
      load.log = settings.log;
      const Graph graph = load_model(settings.model, load);
      RankAutoOptions options = settings.auto_plan;
      options.threads_per_worker = settings.threads;
      options.samples = settings.samples;
      options.log = settings.log;
      text = rank_candidates_text(plan_rank_candidates(graph, options, mpi.size()));
    } catch (const std::exception& e) {
      failure = *e.what() ? e.what() : "unknown error";
    }
  }
  if (!agree_to_start_or_say_why(mpi, failure, 0,
                                 settings.rank_timeout_seconds + kRankPlanningSeconds))
    return std::nullopt;
  try {
    return rank_candidates_from_text(
        broadcast_text(mpi, text, settings.rank_timeout_seconds, "rank 0's candidate plans"));
  } catch (const std::exception& e) {
    abort_ranks(mpi.comm(), mpi.rank(), e.what());
  }
}

// Auto's timed check on the ranks: the candidates run alike, interleaved as on threads
// (time_alike), every run started together; rank 0's medians decide, since its runs span the
// whole inference (inputs out, outputs back). Returns the candidate kept, on every rank; the
// check is rank 0's.
std::size_t check_on_ranks(const RankRunSettings& settings, const MpiSession& mpi,
                           std::vector<Prepared>& each,
                           const std::vector<RankCandidate>& candidates, AutoCheck& check) {
  RunRecipe recipe;
  recipe.timer = [&](const std::string& name, ExecutorInterface& executor,
                     const std::vector<SampleInputs>& inputs) {
    barrier(mpi, settings.rank_timeout_seconds,
            fmt::format("every rank to start the next run of auto's check ({})", name));
    return time_one_run(name, executor, inputs);
  };
  const std::size_t none = candidates.size();
  std::size_t split = none;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].role == "split") split = i;
  std::vector<double> ms(candidates.size(), std::numeric_limits<double>::quiet_NaN());
  std::size_t kept = 0;
  try {
    // Every rank's copy of the inputs is alike (rank 0's, or empty samples).
    const std::vector<SampleInputs>& inputs = each.front().inputs;
    if (split != none) {
      // The region rules could mistake an op: one run of the split beside the choice, every
      // rank together, its outputs compared on rank 0 before it may be timed or kept (as auto
      // on threads does, spatial_if_faster).
      const auto run_once = [&](std::size_t i) {
        barrier(mpi, settings.rank_timeout_seconds,
                fmt::format("every rank to run {} once, its outputs compared",
                            candidates[i].configuration));
        return each[i].executor().run(inputs);
      };
      const std::vector<std::vector<Tensor>> got = run_once(split);
      const std::vector<std::vector<Tensor>> want = run_once(0);
      check.split_rejected = broadcast_text(
          mpi, mpi.rank() == 0 ? split_outputs_differ(got, want, candidates[0].configuration) : "",
          settings.rank_timeout_seconds, "rank 0's comparison of the split's outputs");
      if (mpi.rank() == 0 && settings.log) {
        settings.log(check.split_rejected.empty()
                         ? fmt::format("ranks: the split's outputs agree with those of {}",
                                       candidates[0].configuration)
                         : "ranks: the split is not timed: " + check.split_rejected);
      }
    }
    std::vector<std::pair<std::string, ExecutorInterface*>> runs;
    std::vector<std::size_t> timed;
    for (std::size_t i = 0; i < each.size(); ++i) {
      if (i == split && !check.split_rejected.empty()) continue;
      runs.emplace_back(candidates[i].configuration, &each[i].executor());
      timed.push_back(i);
    }
    const std::vector<double> medians = time_alike(recipe, runs, inputs, /*on_caller_thread=*/true);
    for (std::size_t k = 0; k < timed.size(); ++k) ms[timed[k]] = medians[k];
    const std::string chosen =
        broadcast_text(mpi, mpi.rank() == 0 ? std::to_string(fastest_measured(ms)) : "",
                       settings.rank_timeout_seconds, "rank 0's pick of auto's timed candidates");
    kept = std::stoul(chosen);
  } catch (const std::exception& e) {
    abort_ranks(mpi.comm(), mpi.rank(), e.what());
  }
  check.candidate = candidates.front().strategy;
  check.candidate_configuration = candidates.front().configuration;
  check.candidate_ms = ms.front();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].role == "runner-up") {
      check.runner_up = candidates[i].configuration;
      check.runner_up_ms = ms[i];
    }
    if (candidates[i].role == "split") {
      check.split = candidates[i].configuration;
      check.split_ms = ms[i];
    }
    if (candidates[i].strategy == "sequential") check.sequential_ms = ms[i];
  }
  check.kept =
      candidates[kept].strategy == "sequential" ? "sequential" : candidates[kept].configuration;
  if (mpi.rank() == 0 && settings.log) settings.log("ranks: " + auto_check_text(check));
  return kept;
}

}  // namespace

RankRunResult run_plan_on_ranks(const RankRunSettings& settings) {
  if (settings.repeat < 1) throw Error("--repeat must be at least 1");
  if (settings.samples < 1) throw Error("--samples must be at least 1");
  require_timeout_seconds("--rank-timeout", settings.rank_timeout_seconds);
  MpiSession mpi;
  const int rank = mpi.rank();
  RankRunResult result;
  std::optional<AtomicFolder> output_folder;
  const bool auto_plan = settings.plan == "auto";
  std::vector<RankCandidate> candidates;  // Those every rank prepares (the choice first).
  std::vector<RankCandidate> dropped;
  if (auto_plan) {
    std::optional<std::vector<RankCandidate>> shared =
        share_candidates(settings, mpi, output_folder);
    if (!shared) {
      result.exit_code = 1;
      return result;
    }
    for (RankCandidate& candidate : *shared)
      (candidate.dropped.empty() ? candidates : dropped).push_back(std::move(candidate));
  }
  std::vector<Prepared> each(std::max<std::size_t>(1, candidates.size()));
  const auto prepare_here = [&] {
    if (!auto_plan) check_targets(settings, mpi, output_folder);
    if (FaultInjection::from_environment(rank).breaks_split()) {
      for (RankCandidate& candidate : candidates)
        if (!candidate.split.is_null())
          candidate.split["layers"]["no_such_node"] = {{"shares", nlohmann::json::array()}};
    }
    uint64_t hash = 0;
    for (std::size_t i = 0; i < each.size(); ++i) {
      prepare(settings, mpi, each[i], auto_plan ? &candidates[i] : nullptr);
      hash = hash_text(std::to_string(each[i].part->plan_hash()), hash);
    }
    return hash;
  };
  if (!prepare_on_every_rank(mpi, prepare_here, settings.rank_timeout_seconds)) {
    result.exit_code = 1;
    return result;
  }
  std::size_t kept = 0;
  if (each.size() > 1) {
    result.auto_check.emplace();
    kept = check_on_ranks(settings, mpi, each, candidates, *result.auto_check);
  }
  // The candidates not kept go, their executors with them.
  Prepared prepared = std::move(each[kept]);
  each.clear();

  std::vector<std::vector<Tensor>> results;
  double origin = 0;
  const std::vector<double> latencies = timed_runs(settings, mpi, prepared, results, origin);
  const RankFigures figures = rank_figures(mpi, prepared);
  std::vector<RankFigures> all;
  std::vector<Trace::Event> events;
  try {
    all = gather_figures(mpi, figures, settings.rank_timeout_seconds);
    if (!settings.trace_file.empty())
      events = gather_trace_events(mpi, prepared.executor().last_trace(), origin,
                                   settings.rank_timeout_seconds);
  } catch (const std::exception& e) {
    abort_ranks(mpi.comm(), rank, e.what());
  }
  if (rank != 0) return result;

  result.reported = true;
  if (!settings.trace_file.empty())
    write_rank_trace(settings.trace_file, std::move(events), prepared.plan().tasks, mpi.size());
  // Only now, with every output in hand, does anything reach the output folder.
  nlohmann::json outputs = write_run_outputs(prepared.run().graph, results.front(),
                                             output_folder ? &*output_folder : nullptr);
  result.report = run_report(settings, mpi, prepared, latencies, all, std::move(outputs),
                             auto_plan ? &candidates[kept] : nullptr, result.auto_check, dropped);
  if (prepared.part->threads().threads != settings.threads) {
    result.threads_line =
        rank_threads_line(prepared.part->threads(), settings.threads, mpi.ranks_on_host());
  }
  return result;
}

int run_on_ranks(const RankRunSettings& settings) {
  const RankRunResult result = run_plan_on_ranks(settings);
  if (!result.reported) return result.exit_code;
  if (settings.json) {
    fmt::print("{}\n", result.report.dump(2));
  } else {
    print_report(settings, result);
  }
  return 0;
}

}  // namespace cleave
