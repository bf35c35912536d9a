// `cleave codegen`: a model and its plan written out as a C++ program or as PyTorch source.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "codegen/cpp_emitter.h"
#include "codegen/pytorch_emitter.h"
#include "codegen/rank_cpp_emitter.h"
#include "codegen/stream_cpp_emitter.h"
#include "codegen/stream_model_check.h"
#include "codegen/streamit_emitter.h"
#include "codegen/streamit_reader.h"
#include "codegen/worker_program.h"
#include "pipeline/layout_choice.h"
#include "pipeline/model_plan.h"
#include "spatial/manifest.h"
#include "stream/from_graph.h"
#include "stream/stream_json.h"
#include "support/atomic_output.h"

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

// cleave's build folder is the one holding this executable; its CMake cache names the
// source folder.
void default_cleave_folders(std::string& root, std::string& build) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (build.empty() && !error) build = exe.parent_path().string();
  if (!root.empty()) return;
  std::ifstream cache(fs::path(build) / "CMakeCache.txt");
  std::string line;
  const std::string key = "cleave_SOURCE_DIR:STATIC=";
  while (std::getline(cache, line)) {
    if (line.rfind(key, 0) == 0) root = line.substr(key.size());
  }
  if (root.empty()) root = fs::path(build).parent_path().string();
}

// Rewrites model paths relative to `from` into paths relative to folder `to`.
void relocate_models(Stream& s, const std::filesystem::path& from,
                     const std::filesystem::path& to) {
  if (s.is_filter()) {
    if (s.op == FilterOp::kModel) {
      s.model = std::filesystem::absolute(from / s.model).lexically_normal().lexically_relative(to);
    }
    return;
  }
  for (Stream& child : s.streams) relocate_models(child, from, to);
}

// --lang streamit: the program file, or the model converted to a stream (thesis ch. 4).
int run_streamit(const CodegenSettings& settings, std::chrono::steady_clock::time_point start,
                 AtomicFolder& out) {
  StreamProgram program;
  if (!settings.stream.empty()) {
    program = load_stream_program(settings.stream);
    check_program_runs_model(program, settings.stream, settings.model.model);
  } else {
    const Graph graph = load_model_for(settings.model);
    program.root = graph_to_stream(graph, graph.name.empty() ? "model" : graph.name).root;
    program.origin = settings.model.model;
    verify_stream(program.root, program.origin);
  }
  Stream root = program.root;
  if (!settings.stream.empty()) {
    // Model paths relative to the folder, in the code and in the program beside it, so that
    // `codegen --stream DIR/stream.cc` (or DIR/program.json) --lang cpp` finds them.
    relocate_models(root, std::filesystem::path(settings.stream).parent_path(),
                    std::filesystem::absolute(settings.output));
    out.write_file("program.json", stream_to_json(root) + "\n");
  }
  // A conversion records the model's fingerprint, so that reading the text back for --lang cpp
  // refuses another model.
  const StreamitCodegenSummary summary =
      emit_streamit(root, settings.stream.empty() ? settings.model.model : settings.stream, out,
                    settings.stream.empty() ? file_fingerprint(settings.model.model) : "");
  out.commit();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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

// --stream takes a program file or the StreamIt text `--lang streamit` wrote (stream.cc);
// `from_model` tells whether it is a model's conversion.
StreamProgram stream_program_for(const CodegenSettings& settings, bool& from_model) {
  from_model = false;
  if (!is_streamit_path(settings.stream)) {
    StreamProgram program = load_stream_program(settings.stream);
    check_program_runs_model(program, settings.stream, settings.model.model);
    return program;
  }
  StreamitText text = load_streamit(settings.stream);
  from_model = !text.converted_fingerprint.empty();
  if (text.converted_fingerprint.empty()) {
    check_program_runs_model(text.program, settings.stream, settings.model.model);
  } else if (file_fingerprint(settings.model.model) != text.converted_fingerprint) {
    throw Error(fmt::format("codegen: {} is the conversion of model {} ({}), not of {}",
                            settings.stream, text.converted_from, text.converted_fingerprint,
                            settings.model.model));
  }
  return text.program;
}

// --stream with --lang cpp: the program's static schedule over ring buffers. Model filters use
// the executor's default layouts (what `cleave stream run` computes) unless --layouts names
// others.
int run_stream_cpp(const CodegenSettings& settings, std::chrono::steady_clock::time_point start,
                   AtomicFolder& out) {
  bool from_model = false;
  const StreamProgram program = stream_program_for(settings, from_model);
  CppCodegenOptions options;
  options.mixed_items = from_model;
  options.model_name = program.root.name;
  options.cleave_root = settings.cleave_root;
  options.cleave_build = settings.cleave_build;
  default_cleave_folders(options.cleave_root, options.cleave_build);
  if (settings.layouts == "plain") {
    options.blocked_layouts = false;
  } else if (settings.layouts != "auto") {
    options.family = *parse_convolution_family(settings.layouts);
  }
  const StreamCppSummary summary = emit_stream_cpp(program, options, out);
  out.commit();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  if (!settings.cleave_root.empty()) require_cleave_root(settings.cleave_root);
  // Checked before any work; replaced only with --force, never a folder holding an input.
  AtomicFolder out(settings.output, {settings.force ? FolderRules::Existing::kReplace
                                                    : FolderRules::Existing::kRefuse,
                                     {settings.model.model, settings.plan, settings.stream}});
  if (settings.lang == "streamit") return run_streamit(settings, start, out);
  if (!settings.stream.empty()) return run_stream_cpp(settings, start, out);
  Graph graph = load_model_for(settings.model);
  ModelPlan plan;
  if (settings.plan.empty()) {
    ModelPlanOptions options;
    options.strategy = "sequential";
    options.workers = 1;
    options.threads_per_worker = settings.threads;
    plan = plan_model(graph, static_costs(graph), options);
  } else if (settings.plan == "auto") {
    ModelPlanOptions options;
    options.strategy = settings.strategy;
    options.workers = settings.workers;
    options.threads_per_worker = settings.threads_per_worker;
    CostTable costs =
        costs_for(graph, settings.costs, settings.workers * settings.threads_per_worker,
                  settings.model.verbose, settings.threads_per_worker);
    plan = plan_model(graph, costs, options);
    if (plan.plan.strategy == "clone") {
      // Cloned nodes would run twice; the generators take one task per node.
      options.strategy = "lc";
      plan = plan_model(graph, costs, options);
    }
  } else {
    // A plan for ranks names cores of the machines it runs on, not of this host.
    plan = read_model_plan(settings.plan, graph, /*cores_on_this_host=*/!settings.ranks);
  }
  const WorkerProgram program = worker_program(graph, plan);
  const std::string model_name = std::filesystem::path(settings.model.model).stem().string();

  nlohmann::json report = {
      {"model", settings.model.model}, {"lang", settings.lang},
      {"output", settings.output},     {"strategy", program.strategy},
      {"workers", program.workers},    {"threads_per_worker", program.threads_per_worker}};
  if (settings.lang == "pytorch") {
    PytorchCodegenSummary summary = emit_pytorch(graph, program, model_name, out);
    report["nodes"] = summary.nodes;
    report["channels"] = summary.channels;
    report["weights_bytes"] = summary.weights_bytes;
  } else {
    CppCodegenOptions options;
    options.model_name = model_name;
    options.cleave_root = settings.cleave_root;
    options.cleave_build = settings.cleave_build;
    default_cleave_folders(options.cleave_root, options.cleave_build);
    if (settings.layouts == "plain") {
      options.blocked_layouts = false;
    } else if (settings.layouts == "auto" && !settings.ranks) {
      options.family = measured_family(graph, program.threads_per_worker);
    } else if (settings.layouts == "auto") {
      // As `cleave run` under mpirun: no rank can time the model, so the family the plan was
      // costed in, else blocked.
      options.family = plan.convolution_family.value_or(ConvolutionFamily::kBlocked);
    } else {
      options.family = *parse_convolution_family(settings.layouts);
    }
    CppCodegenSummary summary = settings.ranks ? emit_rank_cpp(graph, program, options, out)
                                               : emit_cpp(graph, program, options, out);
    report["ranks"] = settings.ranks;
    report["layouts"] = options.blocked_layouts ? to_string(options.family) : "plain";
    report["steps"] = summary.steps;
    report["channels"] = summary.channels;
    report["arena_bytes"] = summary.arena_bytes;
    report["unshared_bytes"] = summary.unshared_bytes;
    report["weights_bytes"] = summary.weights_bytes;
  }
  // The plan itself, so that `cleave run --plan DIR/plan.json` runs what was generated.
  out.write_file("plan.json", model_plan_to_json(plan, graph).dump(1) + "\n");
  out.commit();
  report["seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (settings.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("codegen    {} ({}) -> {}\n", settings.model.model, settings.lang, settings.output);
  fmt::print("plan       {} on {} {}(s) x {} thread(s), {} {} between {}s\n", program.strategy,
             program.workers, settings.ranks ? "rank" : "worker", program.threads_per_worker,
             report["channels"].get<int>(), settings.ranks ? "message(s)" : "value(s)",
             settings.ranks ? "rank" : "worker");
  if (report.contains("arena_bytes")) {
    fmt::print("memory     arena {:.2f} MiB ({:.2f} MiB without reuse), weights {:.2f} MiB\n",
               report["arena_bytes"].get<double>() / 1048576.0,
               report["unshared_bytes"].get<double>() / 1048576.0,
               report["weights_bytes"].get<double>() / 1048576.0);
    fmt::print("layouts    {}\n", report["layouts"].get<std::string>());
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
  command->add_option("--cleave-build", settings->cleave_build,
                      "cleave build folder with libcleave_lib.a (default: this binary's)");
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
