// Every rank's `cleave run --plan`: load, agree before work, run pipelined, gather, report.
#include "distributed/rank_run.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cost/cost_table.h"
#include "distributed/mpi_executor.h"
#include "distributed/mpi_session.h"
#include "distributed/rank_sync.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "onnx/atomic_file.h"
#include "runtime/npy.h"
#include "runtime/trace.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/limits.h"
#include "support/timing.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// Everything a rank needs, made before the ranks agree to start.
struct Prepared {
  Graph graph;
  ModelPlan plan;
  std::unique_ptr<MpiExecutor> executor;
  std::vector<SampleInputs> inputs;  // One stream (empty samples on ranks other than 0).
  double model_weight_bytes = 0;
  bool unread_weights = false;  // Some weights were never read (loaded as is).
  uint64_t hash = 0;
  std::string layouts = "blocked";            // The family the kernels run, or "plain".
  std::string layouts_from = "default";       // option (--layouts), plan, or default.
  RankThreads threads;                        // Intra-op threads this rank runs with, and why.
  std::optional<AtomicFolder> output_folder;  // Rank 0's --output-dir, checked before the work.
};

void prepare(const RankRunSettings& settings, const MpiSession& session, Prepared& prepared) {
  // Rank 0's outputs are checked first, so a bad target stops every rank before any work.
  if (session.rank() == 0 && !settings.output_dir.empty())
    prepared.output_folder.emplace(settings.output_dir,
                                   FolderRules{FolderRules::Existing::kMerge, settings.files_read});
  if (session.rank() == 0 && !settings.trace_file.empty()) require_file_target(settings.trace_file);
  LoadOptions load;
  load.shapes = parse_input_shapes(settings.shapes);
  load.optimize = settings.optimize;
  // A model loaded as it is (no passes rewrite its weights) need not be read whole: its weights,
  // external or embedded, stay on disk until this rank knows which of them its tasks read.
  std::map<std::string, ExternalWeight> unread;
  if (!settings.optimize && load.shapes.empty() && !settings.read_whole_model)
    load.unread_external = &unread;
  if (settings.before_load) settings.before_load(session.size());
  prepared.graph = load_model(settings.model, load);
  if (settings.loaded) settings.loaded(prepared.graph);
  const auto unread_of = [&](ValueId id) -> const ExternalWeight& {
    return unread.at(prepared.graph.value(id).name);
  };
  // The plan's fingerprint covers every weight: hash the unread ones piece by piece.
  const std::string fingerprint = graph_fingerprint(
      prepared.graph,
      [&](ValueId id, const std::function<void(const std::byte*, std::size_t)>& add) {
        if (unread.count(prepared.graph.value(id).name)) {
          read_external_weight_in_pieces(unread_of(id), prepared.graph.value(id).name, add);
        }
      });
  // Read once: what the ranks compare is the plan they run.
  const nlohmann::json plan_json = read_json_file(settings.plan, "plan file");
  prepared.plan = model_plan_from_json(plan_json, prepared.graph, settings.plan,
                                       /*cores_on_this_host=*/false, fingerprint);
  const int workers = static_cast<int>(prepared.plan.plan.order.size());
  if (workers != session.size()) {
    throw Error(
        fmt::format("{}: the plan has {} workers, but {} ranks were started (run it with "
                    "mpirun -np {})",
                    settings.plan, workers, session.size(), workers));
  }
  prepared.hash = hash_text(plan_json.dump(), hash_text(fingerprint));
  for (ValueId id : prepared.graph.initializers()) {
    auto& data = *prepared.graph.value(id).initializer;
    if (data.bytes) prepared.model_weight_bytes += static_cast<double>(data.bytes->size());
    if (!data.bytes && unread.count(prepared.graph.value(id).name))
      prepared.model_weight_bytes += static_cast<double>(unread_of(id).bytes);
  }
  for (ValueId id : initializers_of_worker(prepared.graph, prepared.plan.tasks, prepared.plan.plan,
                                           session.rank())) {
    auto& data = *prepared.graph.value(id).initializer;
    if (!data.bytes && unread.count(prepared.graph.value(id).name))
      data.bytes = read_external_weight(unread_of(id), prepared.graph.value(id).name);
  }
  prepared.unread_weights = !unread.empty();
  keep_weights_of(prepared.graph, prepared.plan.tasks, prepared.plan.plan, session.rank());
  // Sampled with the weights loaded, just before the kernels fix their teams.
  prepared.threads =
      choose_rank_threads(settings.threads, settings.fixed_threads, session.ranks_on_host());
  MpiOptions options;
  options.threads = prepared.threads.threads;
  options.rank_timeout_seconds = settings.rank_timeout_seconds;
  options.release_packed_weights = !settings.keep_loaded_weights;
  options.blocked_layouts = !settings.plain_layouts;
  if (settings.layouts != "auto") {
    auto family = parse_convolution_family(settings.layouts);
    if (!family) throw Error(fmt::format("--layouts '{}': unknown family", settings.layouts));
    options.convolution_family = *family;
    prepared.layouts_from = "option";
  } else if (prepared.plan.convolution_family) {
    // No rank can time the model (each holds only its weights): run what the plan was costed in.
    options.convolution_family = *prepared.plan.convolution_family;
    prepared.layouts_from = "plan";
  }
  prepared.layouts = options.blocked_layouts ? to_string(options.convolution_family) : "plain";
  if (settings.plain_layouts) prepared.layouts_from = "option";
  prepared.executor = std::make_unique<MpiExecutor>(prepared.graph, prepared.plan.tasks,
                                                    prepared.plan.plan, session.comm(), options);
  // The executor holds the weights now; this copy would keep them alive after its kernels
  // packed them.
  for (ValueId id : prepared.graph.initializers())
    prepared.graph.value(id).initializer->bytes.reset();
  const int per_run = prepared.executor->samples();
  if (settings.samples % per_run != 0) {
    throw Error(fmt::format("--samples {}: the plan runs {} samples at a time; give a multiple",
                            settings.samples, per_run));
  }
  prepared.inputs.resize(static_cast<std::size_t>(settings.samples));
  if (session.rank() == 0) {
    for (int sample = 0; sample < settings.samples; ++sample)
      prepared.inputs[sample] = settings.inputs(prepared.graph, sample);
  }
}

// Rank 0 gets every rank's trace events (task, start, end, wait).
std::vector<Trace::Event> gather_events(const MpiSession& session, const Trace& trace,
                                        double timeout_seconds) {
  std::vector<double> mine;
  for (const auto& event : trace.events) {
    mine.insert(mine.end(), {static_cast<double>(event.task), static_cast<double>(event.worker),
                             event.start, event.end, event.wait});
  }
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(session.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, session.comm(), &request);
  const auto what = [] { return std::string("every rank's trace"); };
  wait_until(request, deadline_after(timeout_seconds), what, timeout_seconds);
  std::vector<int> offsets(counts.size(), 0);
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::vector<double> all(static_cast<std::size_t>(std::max(total, 1)));
  MPI_Igatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
               MPI_DOUBLE, 0, session.comm(), &request);
  wait_until(request, deadline_after(timeout_seconds), what, timeout_seconds);
  std::vector<Trace::Event> events;
  if (session.rank() != 0) return events;
  for (int i = 0; i + 4 < total; i += 5) {
    events.push_back(Trace::Event{static_cast<int>(all[i]), static_cast<int>(all[i + 1]),
                                  all[i + 2], all[i + 3], all[i + 4]});
  }
  return events;
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
// all. Returns the milliseconds of the timed runs.
std::vector<double> timed_runs(const RankRunSettings& settings, const MpiSession& session,
                               Prepared& prepared, std::vector<std::vector<Tensor>>& results) {
  ExecutorInterface& executor = *prepared.executor;
  std::vector<double> latencies;
  try {
    for (int i = 0; i < settings.warmup + settings.repeat; ++i) {
      barrier(session, settings.rank_timeout_seconds, "every rank to start the next repeat");
      auto start = Clock::now();
      results = executor.run(prepared.inputs);
      if (i >= settings.warmup)
        latencies.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  } catch (const std::exception& e) {
    abort_ranks(session.comm(), session.rank(), e.what());
  }
  return latencies;
}

// What this rank reports to rank 0.
RankFigures rank_figures(const MpiSession& session, const Prepared& prepared) {
  const RunStats& mine = prepared.executor->stats();
  RankFigures figures;
  figures.tasks = mine.tasks;
  figures.weight_bytes = static_cast<double>(mine.weight_bytes);
  figures.bytes_sent = mine.bytes_sent;
  figures.bytes_received = mine.bytes_received;
  figures.messages_sent = static_cast<double>(mine.messages_sent);
  figures.messages_received = static_cast<double>(mine.messages_received);
  figures.peak_activation_bytes = static_cast<double>(mine.peak_activation_bytes);
  figures.peak_rss_bytes = static_cast<double>(peak_rss_bytes());
  figures.traced_seconds = prepared.executor->last_trace().makespan;
  figures.released_weight_bytes = static_cast<double>(mine.released_weight_bytes);
  figures.threads = prepared.threads.threads;
  figures.host_other_runnable =
      prepared.threads.sampled ? prepared.threads.host_load.other_runnable : -1;
  std::strncpy(figures.host, session.host().c_str(), sizeof figures.host - 1);
  return figures;
}

// Rank 0's report of the run, without its outputs and trace file.
nlohmann::json run_report(const RankRunSettings& settings, const MpiSession& session,
                          const Prepared& prepared, const std::vector<double>& latencies,
                          const std::vector<RankFigures>& all) {
  nlohmann::json report;
  report["model"] = settings.model;
  report["ranks"] = session.size();
  report["threads_per_rank"] = prepared.threads.threads;
  report["threads_requested"] = settings.threads;
  report["plan"] = {{"file", settings.plan},
                    {"strategy", prepared.plan.plan.strategy},
                    {"workers", prepared.plan.plan.order.size()},
                    {"samples_per_run", prepared.executor->samples()},
                    {"predicted_ms", prepared.plan.plan.makespan * 1e3}};
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  const double median = median_of(latencies);
  report["latency_ms"] = {{"min", sorted.front()}, {"median", median}, {"runs", latencies}};
  report["layouts"] = {{"family", prepared.layouts}, {"from", prepared.layouts_from}};
  report["samples"] = settings.samples;
  report["throughput_samples_per_s"] = settings.samples / (median / 1e3);
  std::vector<double> per_sample;
  for (double seconds : prepared.executor->stats().sample_seconds)
    per_sample.push_back(seconds * 1e3);
  report["sample_latency_ms"] = {
      {"median", median_of(per_sample)},
      {"max", per_sample.empty() ? 0.0 : *std::max_element(per_sample.begin(), per_sample.end())},
      {"per_sample", per_sample}};
  report["model_weight_bytes"] = prepared.model_weight_bytes;
  report["weights_read"] =
      prepared.unread_weights ? "own tasks' only" : "whole model, then dropped";
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < session.size(); ++r) {
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
         {"host_other_runnable",
          f.host_other_runnable < 0 ? nlohmann::json() : nlohmann::json(f.host_other_runnable)}});
  }
  report["per_rank"] = ranks;
  return report;
}

// Only now, with every output in hand, does anything reach the output folder. Returns the
// outputs' entries of the report.
nlohmann::json write_outputs(const RankRunSettings& settings, Prepared& prepared,
                             const std::vector<Tensor>& outputs) {
  const Graph& graph = prepared.graph;
  nlohmann::json output_list = nlohmann::json::array();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = graph.value(graph.outputs()[i]).name;
    nlohmann::json entry = {{"name", name}, {"type", outputs[i].describe()}};
    if (prepared.output_folder) {
      const std::string file_name = file_name_for(name) + ".npy";
      write_npy(prepared.output_folder->staging_path(file_name), outputs[i]);
      entry["file"] = (std::filesystem::path(settings.output_dir) / file_name).string();
    }
    output_list.push_back(entry);
  }
  if (prepared.output_folder) prepared.output_folder->commit();
  return output_list;
}

// The text form of rank 0's report.
void print_report(const RankRunSettings& settings, const RankRunResult& result) {
  const nlohmann::json& report = result.report;
  fmt::print("model      {}\n", settings.model);
  fmt::print(
      "latency    min {:.3f} ms, median {:.3f} ms over {} run(s), {} rank(s) x {} thread(s)\n",
      report["latency_ms"]["min"].get<double>(), report["latency_ms"]["median"].get<double>(),
      settings.repeat, report["ranks"].get<int>(), report["threads_per_rank"].get<int>());
  if (!result.threads_line.empty()) fmt::print("{}\n", result.threads_line);
  fmt::print("stream     {} sample(s): {:.1f} samples/s, per-sample latency median {:.3f} ms\n",
             settings.samples, report["throughput_samples_per_s"].get<double>(),
             report["sample_latency_ms"]["median"].get<double>());
  fmt::print("plan       {} on {} rank(s): predicted {:.3f} ms\n",
             report["plan"]["strategy"].get<std::string>(), report["ranks"].get<int>(),
             report["plan"]["predicted_ms"].get<double>());
  const std::string from = report["layouts"]["from"].get<std::string>();
  fmt::print("layouts    {} ({})\n", report["layouts"]["family"].get<std::string>(),
             from == "plan"     ? "the family the plan's costs were profiled in"
             : from == "option" ? "as asked"
                                : "the default: the plan names no family");
  fmt::print("weights    {:.2f} MiB in the model; ranks read {}\n",
             report["model_weight_bytes"].get<double>() / 1048576.0,
             report["weights_read"].get<std::string>());
  for (const auto& entry : report["per_rank"]) {
    fmt::print(
        "rank {:<5} {} tasks, weights {:.2f} MiB ({:.2f} freed once packed), sent {:.2f} MiB in "
        "{} messages, peak RSS {:.1f} MiB\n",
        entry["rank"].get<int>(), entry["tasks"].get<double>(),
        entry["weight_bytes"].get<double>() / 1048576.0,
        entry["released_weight_bytes"].get<double>() / 1048576.0,
        entry["bytes_sent"].get<double>() / 1048576.0, entry["messages_sent"].get<double>(),
        entry["peak_rss_bytes"].get<double>() / 1048576.0);
  }
  for (const auto& entry : report["outputs"]) {
    fmt::print("output     {} {}{}\n", entry["name"].get<std::string>(),
               entry["type"].get<std::string>(),
               entry.contains("file") ? " -> " + entry["file"].get<std::string>() : "");
  }
  if (!settings.trace_file.empty()) fmt::print("trace      {}\n", settings.trace_file);
}

}  // namespace

RankRunResult run_plan_on_ranks(const RankRunSettings& settings) {
  if (settings.repeat < 1) throw Error("--repeat must be at least 1");
  if (settings.samples < 1) throw Error("--samples must be at least 1");
  require_timeout_seconds("--rank-timeout", settings.rank_timeout_seconds);
  MpiSession session;
  const int rank = session.rank();
  Prepared prepared;
  const auto prepare_here = [&] {
    prepare(settings, session, prepared);
    return prepared.hash;
  };
  RankRunResult result;
  if (!prepare_on_every_rank(session, prepare_here, settings.rank_timeout_seconds)) {
    result.exit_code = 1;
    return result;
  }

  std::vector<std::vector<Tensor>> results;
  const std::vector<double> latencies = timed_runs(settings, session, prepared, results);
  const RankFigures figures = rank_figures(session, prepared);
  std::vector<RankFigures> all;
  std::vector<Trace::Event> events;
  try {
    all = gather_figures(session, figures, settings.rank_timeout_seconds);
    if (!settings.trace_file.empty())
      events =
          gather_events(session, prepared.executor->last_trace(), settings.rank_timeout_seconds);
  } catch (const std::exception& e) {
    abort_ranks(session.comm(), rank, e.what());
  }
  if (rank != 0) return result;

  result.reported = true;
  result.report = run_report(settings, session, prepared, latencies, all);
  result.report["outputs"] = write_outputs(settings, prepared, results.front());
  if (!settings.trace_file.empty()) {
    write_rank_trace(settings.trace_file, std::move(events), prepared.plan.tasks, session.size());
    result.report["trace_file"] = settings.trace_file;
  }
  if (prepared.threads.threads != settings.threads) {
    result.threads_line =
        rank_threads_line(prepared.threads, settings.threads, session.ranks_on_host());
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
