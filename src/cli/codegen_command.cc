// `cleave codegen`: a model and its plan written out as a C++ program or as PyTorch source.
#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/codegen_options.h"
#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "codegen/codegen_driver.h"
#include "frontend/model_plan.h"
#include "machine/machine.h"
#include "support/atomic_output.h"
#include "support/error.h"

namespace cleave::cli {

namespace {

CodegenRequest request_of(const CodegenSettings& settings) {
  return {settings.model.model, settings.lang,        settings.output,
          settings.stream,      settings.layouts,     settings.ranks,
          settings.samples,     settings.cleave_root, settings.cleave_build};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --lang streamit: the program file, or the model converted to a stream (thesis ch. 4).
int run_streamit(const CodegenSettings& settings, std::chrono::steady_clock::time_point start,
                 AtomicFolder& out) {
  const StreamitCodegenSummary summary = codegen_streamit(
      request_of(settings), [&settings] { return load_model_for(settings.model); }, out);
  const double seconds = seconds_since(start);
  if (settings.json) {
    const nlohmann::json report = {
        {"model", settings.model.model},    {"lang", settings.lang},
        {"output", settings.output},        {"stream", settings.stream},
        {"filters", summary.filters},       {"pipelines", summary.pipelines},
        {"splitjoins", summary.splitjoins}, {"seconds", seconds}};
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("codegen    {} (streamit) -> {}\n",
             settings.stream.empty() ? settings.model.model : settings.stream, settings.output);
  fmt::print("stream     {} filter(s), {} pipeline(s), {} split-join(s)\n", summary.filters,
             summary.pipelines, summary.splitjoins);
  fmt::print("time       {:.3f} s\n", seconds);
  fmt::print("next       see {}/README.md\n", settings.output);
  return 0;
}

// --stream with --lang cpp: the program's static schedule over ring buffers.
int run_stream_cpp(const CodegenSettings& settings, std::chrono::steady_clock::time_point start,
                   AtomicFolder& out) {
  const StreamCppSummary summary = codegen_stream_cpp(request_of(settings), out);
  const double seconds = seconds_since(start);
  if (settings.json) {
    const nlohmann::json report = {{"model", settings.model.model},
                                   {"lang", settings.lang},
                                   {"output", settings.output},
                                   {"stream", settings.stream},
                                   {"actors", summary.actors},
                                   {"model_filters", summary.model_filters},
                                   {"channels", summary.channels},
                                   {"ring_bytes", summary.ring_bytes},
                                   {"mixed_channels", summary.mixed_channels},
                                   {"input_per_iteration", summary.input_per_iteration},
                                   {"output_per_iteration", summary.output_per_iteration},
                                   {"seconds", seconds}};
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("codegen    {} (cpp) -> {}\n", settings.stream, settings.output);
  fmt::print(
      "stream     {} actor(s), {} model filter(s), {} channel(s) ({} of mixed items), rings "
      "{:.2f} MiB\n",
      summary.actors, summary.model_filters, summary.channels, summary.mixed_channels,
      static_cast<double>(summary.ring_bytes) / 1048576.0);
  fmt::print("schedule   {} input item(s) -> {} output item(s) per steady-state iteration\n",
             summary.input_per_iteration, summary.output_per_iteration);
  fmt::print("time       {:.3f} s\n", seconds);
  fmt::print("next       see {}/README.md\n", settings.output);
  return 0;
}

int run_codegen(const CodegenSettings& settings) {
  const auto start = std::chrono::steady_clock::now();
  if (!settings.stream.empty() && !settings.plan.empty()) {
    throw Error("codegen: give --plan or --stream, not both");
  }
  if (!settings.stream.empty() && settings.lang == "pytorch") {
    throw Error("codegen: --stream takes --lang streamit or cpp, not pytorch");
  }
  if (settings.ranks && (settings.lang != "cpp" || settings.plan.empty())) {
    throw Error(
        "codegen: --ranks takes --lang cpp and a --plan (file or auto) whose workers are "
        "the ranks");
  }
  if (settings.samples > 1 && settings.lang == "pytorch") {
    throw Error(
        "codegen: --samples takes --lang cpp: generated PyTorch runs one sample a run (give "
        "--samples 1, or --lang cpp for a stream of samples on worker threads or MPI ranks)");
  }
  if (settings.samples > 1 && (settings.plan.empty() || !settings.stream.empty())) {
    throw Error(
        "codegen: --samples takes a --plan (a plan file of that many samples, or auto): the "
        "plan says which worker runs which sample");
  }
  if (!settings.machine.empty() && (!settings.ranks || settings.plan != "auto")) {
    throw Error(
        "codegen: --machine takes --ranks and --plan auto (a plan file was made for its "
        "machine already)");
  }
  if (!settings.cleave_root.empty()) require_cleave_root(settings.cleave_root);
  // A bad machine file is reported before the model is loaded or profiled.
  std::optional<Machine> machine;
  if (!settings.machine.empty()) machine = read_machine(settings.machine);
  // Checked before any work; replaced only with --force, never a folder holding an input.
  AtomicFolder out(
      settings.output,
      {settings.force ? FolderRules::Existing::kReplace : FolderRules::Existing::kRefuse,
       {settings.model.model, settings.plan, settings.stream, settings.machine}});
  if (settings.lang == "streamit") return run_streamit(settings, start, out);
  if (!settings.stream.empty()) return run_stream_cpp(settings, start, out);
  Graph graph = load_model_for(settings.model);
  CodegenPlanSource source;
  source.plan = settings.plan;
  source.costs = settings.costs;
  source.threads = settings.threads;
  source.auto_options.strategy = settings.strategy;
  source.auto_options.workers = settings.workers;
  source.auto_options.threads_per_worker = settings.threads_per_worker;
  source.auto_options.machine = machine;
  const ModelPlan plan =
      plan_to_generate(request_of(settings), graph, source, log_to_stderr(settings.model.verbose));
  nlohmann::json report = codegen_plan(request_of(settings), graph, plan, out);
  report["seconds"] = seconds_since(start);
  if (settings.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("codegen    {} ({}) -> {}\n", settings.model.model, settings.lang, settings.output);
  fmt::print("plan       {} on {} {}(s) x {} thread(s), {} {} between {}s{}\n",
             report["strategy"].get<std::string>(), report["workers"].get<int>(),
             settings.ranks ? "rank" : "worker", report["threads_per_worker"].get<int>(),
             report["channels"].get<int>(), settings.ranks ? "message(s)" : "value(s)",
             settings.ranks ? "rank" : "worker",
             settings.samples > 1 ? fmt::format(" per run of {} samples", settings.samples) : "");
  if (report.contains("arena_bytes")) {
    fmt::print("memory     arena {:.2f} MiB ({:.2f} MiB without reuse), weights {:.2f} MiB\n",
               report["arena_bytes"].get<double>() / 1048576.0,
               report["unshared_bytes"].get<double>() / 1048576.0,
               report["weights_bytes"].get<double>() / 1048576.0);
    fmt::print("layouts    {}\n", report["layouts"].get<std::string>());
    if (report.value("concat_inputs_in_place", 0) > 0)
      fmt::print("in place   {} Concat input(s) written straight into the Concat's output\n",
                 report["concat_inputs_in_place"].get<int>());
    if (report.value("run_time_steps", 0) > 0)
      fmt::print("run time   {} step(s) sized during the run (see README.md)\n",
                 report["run_time_steps"].get<int>());
  }
  if (report["predicted_seconds"].is_number()) {
    fmt::print("predicted  {:.3f} ms (the plan's makespan, recorded in plan.json)\n",
               report["predicted_seconds"].get<double>() * 1e3);
  }
  fmt::print("time       {:.3f} s\n", report["seconds"].get<double>());
  fmt::print("next       see {}/README.md\n", settings.output);
  return 0;
}

}  // namespace

void register_codegen(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<CodegenSettings>();
  CLI::App* command = app.add_subcommand(
      "codegen", "Write a model and its plan as a C++ program or as readable PyTorch");
  add_codegen_options(command, *settings);
  command->callback(
      [settings, &action] { action = [settings] { return run_codegen(*settings); }; });
}

}  // namespace cleave::cli
