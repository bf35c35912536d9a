// What `cleave codegen` writes for each language: a stream as StreamIt or C++, a plan as C++ or
// PyTorch.
#include "codegen/codegen_driver.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/cpp_emitter.h"
#include "codegen/program_layout.h"
#include "codegen/pytorch_emitter.h"
#include "codegen/rank_cpp_emitter.h"
#include "codegen/sample_stream_emitter.h"
#include "codegen/stream_model_check.h"
#include "codegen/streamit_reader.h"
#include "codegen/worker_program.h"
#include "frontend/costs.h"
#include "frontend/layout_choice.h"
#include "frontend/stage_plan.h"
#include "runtime/run_time_shapes.h"
#include "spatial/manifest.h"
#include "spatial/split_machine.h"
#include "stream/from_graph.h"
#include "stream/stream_json.h"
#include "support/error.h"

namespace cleave {

namespace {

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

// A rank program passes values between ranks in messages of the sizes fixed at generation,
// and a stream of samples hands values between workers in buffers of those sizes, so a
// run-time step (a sub-graph, a shape the run decides) has no place in either yet; say which
// node, before anything is written. The one-sample worker form runs them (run_time_nodes).
void require_static_steps(const Graph& graph, const std::string& form) {
  const std::vector<bool> run_time = run_time_nodes(graph);
  for (NodeId id : graph.topological_order()) {
    if (!run_time[id]) continue;
    const Node& node = graph.node(id);
    throw Error(fmt::format(
        "codegen --lang cpp {}: node '{}' ({}) {}, which generated {} do not support yet; "
        "`codegen --lang cpp` of one sample without --ranks and `cleave run` run it",
        form, node.name, node.op_type, run_time_reason(graph, id),
        form == "--ranks" ? "rank programs" : "streams of samples"));
  }
}

// A plan of several samples as the generators take it (worker_program, and each worker's loop,
// worker_samples), checked before anything is planned further or written: an Error
// names the plan's origin and the plans to make instead.
void check_generated_form(const Graph& graph, const ModelPlan& plan, const std::string& origin) {
  try {
    const WorkerProgram program = worker_program(graph, plan);
    std::vector<NodeId> nodes;
    for (int w = 0; w < program.workers; ++w) worker_samples(graph, program, w, nodes);
  } catch (const Error& e) {
    throw Error(fmt::format(
        "codegen: {}: {}; make the plan with `cleave plan MODEL --strategy pipeline --machine "
        "FILE --samples N` or `--strategy data-parallel --samples N`, or pass --plan auto",
        origin, e.what()));
  }
}

// --stream takes a program file or the StreamIt text `--lang streamit` wrote (stream.cc);
// `from_model` tells whether it is a model's conversion.
StreamProgram stream_program_for(const CodegenRequest& request, bool& from_model) {
  from_model = false;
  if (!is_streamit_path(request.stream)) {
    StreamProgram program = load_stream_program(request.stream);
    check_program_runs_model(program, request.stream, request.model);
    return program;
  }
  StreamitText text = load_streamit(request.stream);
  from_model = !text.converted_fingerprint.empty();
  if (text.converted_fingerprint.empty()) {
    check_program_runs_model(text.program, request.stream, request.model);
  } else if (file_fingerprint(request.model) != text.converted_fingerprint) {
    throw Error(fmt::format("codegen: {} is the conversion of model {} ({}), not of {}",
                            request.stream, text.converted_from, text.converted_fingerprint,
                            request.model));
  }
  return text.program;
}

// The C++ emitters' options: names, cleave's folders and the kernels' layouts (--layouts
// "auto" for a plan is settled by the caller).
CppCodegenOptions cpp_options(const CodegenRequest& request, const std::string& model_name) {
  CppCodegenOptions options;
  options.model_name = model_name;
  options.cleave_root = request.cleave_root;
  options.cleave_build = request.cleave_build;
  default_cleave_folders(options.cleave_root, options.cleave_build);
  if (request.layouts == "plain") {
    options.blocked_layouts = false;
  } else if (request.layouts != "auto") {
    options.family = *parse_convolution_family(request.layouts);
  }
  return options;
}

// The plan's batch is the samples asked for.
void check_plan_samples(const CodegenRequest& request, const ModelPlan& plan,
                        const std::string& origin) {
  const int64_t batch = plan.plan.batch;
  if (batch == request.samples) return;
  throw Error(fmt::format(
      "codegen: {} runs {} sample(s) at a time (strategy {}), not the {} of --samples; give "
      "--samples {}",
      origin, batch, plan.plan.strategy, request.samples, batch));
}

}  // namespace

StreamitCodegenSummary codegen_streamit(const CodegenRequest& request,
                                        const std::function<Graph()>& load_graph,
                                        AtomicFolder& out) {
  StreamProgram program;
  if (!request.stream.empty()) {
    program = load_stream_program(request.stream);
    check_program_runs_model(program, request.stream, request.model);
  } else {
    const Graph graph = load_graph();
    program.root = graph_to_stream(graph, graph.name.empty() ? "model" : graph.name).root;
    program.origin = request.model;
    verify_stream(program.root, program.origin);
  }
  Stream root = program.root;
  if (!request.stream.empty()) {
    // Model paths relative to the folder, in the code and in the program beside it, so that
    // `codegen --stream DIR/stream.cc` (or DIR/program.json) --lang cpp` finds them.
    relocate_models(root, std::filesystem::path(request.stream).parent_path(),
                    std::filesystem::absolute(request.output));
    out.write_file("program.json", stream_to_json(root) + "\n");
  }
  // A conversion records the model's fingerprint, so that reading the text back for --lang cpp
  // refuses another model.
  const StreamitCodegenSummary summary =
      emit_streamit(root, request.stream.empty() ? request.model : request.stream, out,
                    request.stream.empty() ? file_fingerprint(request.model) : "");
  out.commit();
  return summary;
}

// Model filters use the executor's default layouts (what `cleave stream run` computes) unless
// --layouts names others.
StreamCppSummary codegen_stream_cpp(const CodegenRequest& request, AtomicFolder& out) {
  bool from_model = false;
  const StreamProgram program = stream_program_for(request, from_model);
  CppCodegenOptions options = cpp_options(request, program.root.name);
  options.mixed_items = from_model;
  const StreamCppSummary summary = emit_stream_cpp(program, options, out);
  out.commit();
  return summary;
}

nlohmann::json codegen_plan(const CodegenRequest& request, const Graph& graph,
                            const ModelPlan& plan, AtomicFolder& out) {
  const WorkerProgram program = worker_program(graph, plan);
  if (program.samples > 1 && request.lang != "cpp") {
    throw Error(fmt::format(
        "codegen: the plan streams {} samples, which generated PyTorch does not run (one sample "
        "a run); --lang cpp runs them on worker threads or, with --ranks, on MPI ranks",
        program.samples));
  }
  const std::string model_name = std::filesystem::path(request.model).stem().string();
  std::optional<ConvolutionFamily> generated_family;
  nlohmann::json report = {
      {"model", request.model},     {"lang", request.lang},
      {"output", request.output},   {"strategy", program.strategy},
      {"workers", program.workers}, {"threads_per_worker", program.threads_per_worker},
      {"samples", program.samples}};
  // The one simulator's prediction the plan carries (plan.json's makespan): with a machine
  // file's ranks, the messages and rank 0's input hand-out and output gather priced.
  report["predicted_seconds"] =
      std::isfinite(plan.plan.makespan) ? nlohmann::json(plan.plan.makespan) : nlohmann::json();
  if (request.lang == "pytorch") {
    PytorchCodegenSummary summary = emit_pytorch(graph, program, model_name, out);
    report["nodes"] = summary.nodes;
    report["channels"] = summary.channels;
    report["weights_bytes"] = summary.weights_bytes;
  } else {
    if (request.ranks) require_static_steps(graph, "--ranks");
    if (!request.ranks && program.samples > 1)
      require_static_steps(graph, fmt::format("--samples {}", program.samples));
    CppCodegenOptions options = cpp_options(request, model_name);
    if (request.layouts == "auto" && !request.ranks) {
      options.family = measured_family(graph, program.threads_per_worker);
    } else if (request.layouts == "auto") {
      // As `cleave run` under mpirun: no rank can time the model, so the family the plan was
      // costed in, else blocked.
      options.family = plan.convolution_family.value_or(ConvolutionFamily::kBlocked);
    }
    CppCodegenSummary summary = request.ranks ? emit_rank_cpp(graph, program, options, out)
                                : program.samples > 1
                                    ? emit_sample_stream_cpp(graph, program, options, out)
                                    : emit_cpp(graph, program, options, out);
    if (options.blocked_layouts) generated_family = options.family;
    report["ranks"] = request.ranks;
    report["layouts"] = options.blocked_layouts ? to_string(options.family) : "plain";
    report["steps"] = summary.steps;
    report["channels"] = summary.channels;
    report["arena_bytes"] = summary.arena_bytes;
    report["unshared_bytes"] = summary.unshared_bytes;
    report["weights_bytes"] = summary.weights_bytes;
    report["run_time_steps"] = summary.run_time_steps;
    report["concat_inputs_in_place"] = summary.concat_inputs_in_place;
  }
  // The plan itself, with the convolution family the code was generated in, so that `cleave
  // run --plan DIR/plan.json` runs what was generated.
  ModelPlan written = plan;
  if (generated_family) written.convolution_family = *generated_family;
  out.write_file("plan.json", model_plan_to_json(written, graph).dump(1) + "\n");
  out.commit();
  return report;
}

ModelPlan plan_to_generate(const CodegenRequest& request, const Graph& graph,
                           const CodegenPlanSource& source,
                           const std::function<void(const std::string&)>& progress) {
  if (source.plan.empty()) {
    ModelPlanOptions options;
    options.strategy = "sequential";
    options.workers = 1;
    options.threads_per_worker = source.threads;
    return plan_model(graph, static_costs(graph), options);
  }
  if (source.plan == "auto") {
    ModelPlanOptions options = source.auto_options;
    options.samples = request.samples;
    options.each_node_once = true;          // the generators take one task per node and sample
    options.fixed_workers = request.ranks;  // one rank per worker, as many as asked
    const bool split_links = request.ranks && !options.machine;
    if (split_links) {
      // Ranks are processes whose hand-offs are messages: without a machine file they are
      // priced as a split's (the --workers ranks of --threads-per-worker threads each).
      options.machine = ranks_without_machine_file(options.workers, options.threads_per_worker);
    }
    // Stages are no task planner's plan: made on the machine file's ranks, as `cleave plan` does.
    ModelPlan plan = options.strategy == "pipeline" && options.machine
                         ? plan_stages_with_costs(graph, source.costs, options, progress).plan
                         : plan_with_costs(graph, source.costs, options, progress).plan;
    if (split_links) {
      const SplitCostModel links;
      plan.plan.notes["link_model"] = fmt::format(
          "no machine file: every pair of ranks linked at {:g} bytes/s and {:g} s a message "
          "(a split's default links)",
          links.bytes_per_second, links.latency_seconds);
    }
    return plan;
  }
  ModelPlan plan = read_model_plan(source.plan, graph, /*cores_on_this_host=*/!request.ranks);
  check_plan_samples(request, plan, source.plan);
  if (request.lang == "cpp" && request.samples > 1) check_generated_form(graph, plan, source.plan);
  return plan;
}

}  // namespace cleave
