// `cleave codegen`: a model and its plan written out as a C++ program or as PyTorch source.
#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

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

struct CodegenSettings {
  ModelSettings model;
  std::string lang;
  std::string output;
  std::string plan;    // Empty: the sequential plan with --threads.
  std::string stream;  // A stream program file (--lang streamit or cpp).
  std::string strategy = "auto";
  std::string costs = "profile";
  std::string machine;  // --ranks --plan auto: the ranks' devices and links (a machine file).
  std::string layouts = "auto";
  int workers = 2;
  int threads_per_worker = 1;
  int threads = 1;
  bool ranks = false;  // --ranks: the plan's workers are MPI ranks.
  bool force = false;
  bool json = false;
  std::string cleave_root;
  std::string cleave_build;
};

CodegenRequest request_of(const CodegenSettings& settings) {
  return {settings.model.model, settings.lang,  settings.output,      settings.stream,
          settings.layouts,     settings.ranks, settings.cleave_root, settings.cleave_build};
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
  fmt::print("plan       {} on {} {}(s) x {} thread(s), {} {} between {}s\n",
             report["strategy"].get<std::string>(), report["workers"].get<int>(),
             settings.ranks ? "rank" : "worker", report["threads_per_worker"].get<int>(),
             report["channels"].get<int>(), settings.ranks ? "message(s)" : "value(s)",
             settings.ranks ? "rank" : "worker");
  if (report.contains("arena_bytes")) {
    fmt::print("memory     arena {:.2f} MiB ({:.2f} MiB without reuse), weights {:.2f} MiB\n",
               report["arena_bytes"].get<double>() / 1048576.0,
               report["unshared_bytes"].get<double>() / 1048576.0,
               report["weights_bytes"].get<double>() / 1048576.0);
    fmt::print("layouts    {}\n", report["layouts"].get<std::string>());
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
  command->add_option("model", settings->model.model, "ONNX model file")->required();
  add_model_load_options(command, settings->model);
  command
      ->add_option("--lang", settings->lang,
                   "cpp (a program per worker), pytorch (threads and queues) or streamit (the "
                   "model as a stream graph, or --stream's program, in StreamIt builder form)")
      ->required()
      ->check(CLI::IsMember({"cpp", "pytorch", "streamit"}));
  command
      ->add_option("-o,--output", settings->output, "Folder to write (written whole or not at all)")
      ->required()
      ->check(path_given());
  command->add_option("--plan", settings->plan,
                      "A plan file (cleave plan -o) or 'auto'; default: sequential with --threads");
  command->add_option("--stream", settings->stream,
                      "A stream program (JSON) that runs MODEL in one of its filters, for "
                      "--lang streamit or cpp; for cpp also the StreamIt text (stream.cc) that "
                      "--lang streamit wrote, of a program or of MODEL's conversion");
  command
      ->add_option("--strategy", settings->strategy,
                   "Strategy for --plan auto (cloned plans become lc)")
      ->check(CLI::IsMember(model_strategies()))
      ->default_val("auto");
  add_costs_option(command, settings->costs);
  command->add_option("--workers", settings->workers, "Workers for --plan auto")
      ->default_val(2)
      ->check(CLI::Range(1, 1024));
  command
      ->add_option("--threads-per-worker", settings->threads_per_worker,
                   "Intra-op threads per worker for --plan auto")
      ->default_val(1)
      ->check(CLI::Range(1, 1024));
  command->add_option("--threads", settings->threads, "Intra-op threads without --plan")
      ->default_val(1)
      ->check(CLI::Range(1, 1024));
  command
      ->add_option("--layouts", settings->layouts,
                   "C++ kernels' convolution layouts: auto (measured and cached, as cleave run), "
                   "blocked, winograd, channels-last, plain; give cleave run the same")
      ->check(CLI::IsMember({"auto", "blocked", "winograd", "channels-last", "plain"}))
      ->default_val("auto");
  command->add_option("--cleave-root", settings->cleave_root,
                      "cleave source folder the C++ build uses (default: this build's)");
  command->add_option(
      "--cleave-build", settings->cleave_build,
      "cleave build folder with cleave_codegen_runtime.cmake (default: this binary's)");
  command->add_option("--machine", settings->machine,
                      "With --ranks and --plan auto: a machine file whose devices are the ranks "
                      "(speeds, memories, links; replaces --workers), so the plan's prediction "
                      "prices the messages, rank 0's input hand-out and output gather included");
  command->add_flag("--ranks", settings->ranks,
                    "--lang cpp: the plan's workers are MPI ranks; one source per rank with MPI "
                    "sends and receives, run with mpirun -np WORKERS");
  command->add_flag("--force", settings->force,
                    "Replace a non-empty output folder (never one holding an input)");
  command->add_flag("--json", settings->json, "Print the summary as JSON");
  command->callback(
      [settings, &action] { action = [settings] { return run_codegen(*settings); }; });
}

}  // namespace cleave::cli
