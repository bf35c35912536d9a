// `cleave stream run`'s driver: stages of a model through the Session, programs by run_stream.
#include "pipeline/stream_run.h"

#include <fmt/core.h>

#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "pipeline/pipeline_run.h"
#include "pipeline/run_report.h"
#include "pipeline/session.h"
#include "stream/fission.h"
#include "stream/placement.h"
#include "stream/report.h"
#include "stream/stage_executor.h"
#include "stream/stream_planner.h"

namespace cleave {

namespace {

StreamRunOptions run_options(const StreamRunSettings& settings, bool model) {
  StreamRunOptions options;
  options.mixed_items = model;
  options.keep_outputs = true;
  options.workers = settings.workers;
  options.capacity_factor = settings.capacity_factor;
  options.method = parse_placement_method(settings.placement);
  options.trace = !settings.trace_file.empty();
  return options;
}

StreamRunSetup run_setup(const StreamRunSettings& settings, std::size_t items) {
  return {settings.program, items, settings.workers, settings.placement, settings.costs};
}

// A stream program file, or a model converted one filter per node (or cut into stages and
// split by --fission): planned (placement) and executed by run_stream.
StreamRunReport run_program(const StreamRunSettings& settings, AtomicFolder* output_folder) {
  const StreamSource loaded = load_stream_source(settings.program, settings.source);
  StreamProgram program = loaded.program;
  for (const FissionSpec& spec : parse_fission_specs(settings.fission))
    apply_fission(program.root, spec, program.origin);
  if (!settings.fission.empty()) verify_stream(program.root, program.origin);
  const std::vector<Tensor> inputs =
      stream_input_items(settings.inputs, settings.program, loaded.graph.get());
  StreamRunOptions options = run_options(settings, loaded.graph != nullptr);
  options.keep_outputs = output_folder != nullptr;
  options.firing_seconds = stream_firing_costs(loaded, program, settings.costs);
  const StreamRunResult r = run_stream(program, inputs, options);
  const StreamGraph graph = flatten_stream(program.root);
  if (!settings.trace_file.empty()) write_stream_trace(settings.trace_file, graph, r);
  if (output_folder) {
    stage_stream_outputs(*output_folder, r);
    output_folder->commit();
  }
  const StreamRunSetup setup = run_setup(settings, inputs.size());
  return {stream_run_json(setup, graph, r), stream_run_text(setup, graph, r)};
}

// An item as the graph input it feeds (items may drop the input's leading dim of 1).
Tensor as_input(const Tensor& item, const Value& input) {
  const std::vector<int64_t> sizes = input.shape.sizes();
  if (!input.shape.is_static() || item.shape() == sizes ||
      input.shape.element_count() != item.element_count())
    return item;  // check_inputs names a mismatch
  Tensor out = Tensor::allocate(item.dtype(), sizes);
  std::memcpy(out.raw(), item.raw(), item.byte_size());
  return out;
}

// The program's items (graph inputs round robin) as one SampleInputs per sample.
std::vector<SampleInputs> samples_of(const std::vector<Tensor>& items, const Graph& graph) {
  const std::vector<ValueId>& names = graph.inputs();
  std::vector<SampleInputs> samples(items.size() / names.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Value& input = graph.value(names[i % names.size()]);
    samples[i / names.size()][input.name] = as_input(items[i], input);
  }
  return samples;
}

// The run report's fields (model, latency, layouts, plan) that the stream report lacks.
std::string with_run_report(const std::string& stream_json, const RunSummary& summary) {
  nlohmann::ordered_json report = nlohmann::ordered_json::parse(stream_json);
  const nlohmann::json shared = run_report_json(summary);
  for (const auto& [key, value] : shared.items())
    if (!report.contains(key)) report[key] = value;
  return report.dump(2);
}

// A model cut into stages: the Session loads it (--shape, loops unrolled, passes), plans the
// pipeline family with that many stages, and its stage executor streams the items.
StreamRunReport run_model_stages(const StreamRunSettings& settings, AtomicFolder* output_folder) {
  std::size_t items = 0;
  std::vector<SampleInputs> samples;
  SessionOptions options;
  options.load.shapes = settings.source.shapes;
  options.load.unroll_loops = true;
  RunRecipe& recipe = options.recipe;
  recipe.strategy = kPipelineStrategy;
  recipe.workers = settings.source.stages;
  recipe.threads_per_worker = 1;
  recipe.samples = settings.inputs.items > 0 ? static_cast<int>(settings.inputs.items) : 1;
  recipe.layouts = "blocked";  // The kernels a model filter runs.
  recipe.costs = settings.costs == "measured" ? kFlopsCosts : settings.costs;
  // Read once the model is specialised, so that a shape it lacks is named first.
  recipe.inputs = [&](const Graph& graph, int sample) {
    if (samples.empty()) {
      const std::vector<Tensor> read =
          stream_input_items(settings.inputs, settings.program, &graph);
      items = read.size();
      samples = samples_of(read, graph);
    }
    return samples.at(static_cast<std::size_t>(sample) % samples.size());
  };
  Session session(settings.program, std::move(options));
  const std::shared_ptr<PreparedShape> shape = session.prepare({});
  const PreparedRun& prepared = shape->run;
  StageExecutor& pipeline = *prepared.pipeline;
  const StreamSource staged{pipeline.program(), pipeline.staged(), std::nullopt, nullptr};
  StreamRunOptions placement = run_options(settings, true);
  placement.firing_seconds = stream_firing_costs(staged, pipeline.program(), settings.costs);
  pipeline.place(placement);
  pipeline.run(samples);
  const StreamRunResult& r = pipeline.last_result();
  if (!settings.trace_file.empty()) write_pipeline_trace(settings.trace_file, pipeline);
  if (output_folder) {
    stage_stream_outputs(*output_folder, r);
    output_folder->commit();
  }
  RunSummary summary;
  summary.model = settings.program;
  summary.latencies_ms = {r.seconds * 1e3};
  summary.layouts_family = to_string(prepared.layouts.family);
  summary.plan =
      RunPlanSummary{kPipelineStrategy, pipeline.workers(), pipeline.threads(), pipeline.samples(),
                     pipeline_seconds(pipeline.staged(), pipeline.samples()) * 1e3};
  summary.trace_file = settings.trace_file;
  const StreamGraph graph = flatten_stream(pipeline.program().root);
  const StreamRunSetup setup = run_setup(settings, items);
  return {with_run_report(stream_run_json(setup, graph, r), summary),
          stream_run_text(setup, graph, r)};
}

}  // namespace

StreamRunReport run_stream_settings(const StreamRunSettings& settings,
                                    AtomicFolder* output_folder) {
  if (is_stream_model(settings.program) && settings.source.stages > 0 && settings.fission.empty())
    return run_model_stages(settings, output_folder);
  return run_program(settings, output_folder);
}

}  // namespace cleave
