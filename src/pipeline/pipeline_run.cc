// The "pipeline" strategy: costs, the stage cut and the stage executor for a prepared run, and
// auto's choice of it.
#include "pipeline/pipeline_run.h"

#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "frontend/auto_search.h"
#include "frontend/costs.h"
#include "pipeline/family_search.h"
#include "runtime/trace.h"
#include "stream/stage_executor.h"
#include "support/error.h"
#include "viz/gantt.h"

namespace cleave {

namespace {

StageExecutorOptions stage_options(const RunRecipe& recipe, int stages) {
  StageExecutorOptions options;
  options.stages = stages;
  options.workers = stages;
  options.samples = recipe.samples;
  options.stages_option = "--workers";
  options.samples_option = "--samples";
  return options;
}

}  // namespace

std::unique_ptr<StageExecutor> make_pipeline(PreparedRun& prepared, const RunRecipe& recipe,
                                             int stages, int threads,
                                             const std::function<SampleInputs(int)>& input_of) {
  const Graph& g = prepared.graph;
  StageExecutorOptions options = stage_options(recipe, stages);
  if (prepared.costs) {  // Else the cut balances FLOPs (costs "flops").
    options.node_cost.assign(g.node_capacity(), 0.0);
    for (NodeId id : g.node_ids()) options.node_cost[id] = prepared.costs->seconds(id, threads);
  }
  options.stage_options.threads = threads;
  options.stage_options.blocked_layouts = !recipe.plain_layouts;
  options.stage_options.convolution_family = prepared.layouts.family;
  auto executor = std::make_unique<StageExecutor>(g, options);
  for (int s = static_cast<int>(prepared.inputs.size()); s < recipe.samples; ++s)
    prepared.inputs.push_back(input_of(s));
  return executor;
}

std::string pipeline_configuration(int stages, int threads) {
  return fmt::format("{} stages x {} thread{}", stages, threads, threads == 1 ? "" : "s");
}

std::optional<std::pair<int, int>> parse_pipeline_configuration(const std::string& text) {
  int stages = 0, threads = 0, read = 0;
  if (std::sscanf(text.c_str(), "%d stages x %d thread%n", &stages, &threads, &read) != 2 ||
      read == 0 || pipeline_configuration(stages, threads) != text) {
    return std::nullopt;
  }
  return std::pair{stages, threads};
}

void prepare_pipeline_run(PreparedRun& prepared, const RunRecipe& recipe,
                          const std::function<SampleInputs(int sample)>& input_of) {
  // Before a profile is measured for a cut that cannot be made.
  check_stage_options(prepared.graph, stage_options(recipe, recipe.workers));
  if (recipe.costs != kFlopsCosts) {
    CostChoice choice;
    choice.source = recipe.costs;
    choice.max_threads = recipe.threads_per_worker;
    choice.threads_per_worker = recipe.threads_per_worker;
    choice.family = prepared.layouts.family;
    prepared.costs = choose_costs(prepared.graph, choice);
  }
  auto executor =
      make_pipeline(prepared, recipe, recipe.workers, recipe.threads_per_worker, input_of);
  if (recipe.log) {
    recipe.log(fmt::format(
        "recipe: pipeline of {} on {} worker(s), {} sample(s), {} costs, "
        "predicted {:.3f} ms",
        pipeline_configuration(executor->stages(), recipe.threads_per_worker), executor->workers(),
        recipe.samples, prepared.costs ? prepared.costs->source : recipe.costs,
        pipeline_seconds(executor->staged(), recipe.samples) * 1e3));
  }
  prepared.pipeline = executor.get();
  prepared.executor = std::move(executor);
}

std::unique_ptr<StageExecutor> pipeline_if_faster(
    PreparedRun& prepared, const RunRecipe& recipe, ModelPlan& kept,
    ExecutorInterface& kept_executor, const std::function<SampleInputs(int sample)>& input_of,
    std::optional<PlanCandidate> row) {
  // On a machine file's devices auto planned the stages itself, one per device (plan_auto).
  if (recipe.samples < 2 || !prepared.costs || recipe.machine) return nullptr;
  if (!row) {
    ModelPlanOptions options;
    options.workers = recipe.workers;
    options.threads_per_worker = recipe.threads_per_worker;
    options.samples = recipe.samples;
    row = pipeline_candidate(prepared.graph, *prepared.costs, options);
  }
  const auto configuration = parse_pipeline_configuration(row->configuration);
  const bool faster = configuration && row->predicted_seconds < kept.plan.makespan;
  // A cut predicted a little slower is timed too: the pipeline's prediction prices no hand-off
  // and plain layouts at the cuts, and on googlenet one predicted 1.05x data-parallel ran 0.98x.
  const bool near = configuration && recipe.auto_check &&
                    row->predicted_seconds <= kStreamCheckMargin * kept.plan.makespan;
  row->rejected = faster || near ? ""
                                 : fmt::format("not faster than {} ({:.3f} ms)", kept.configuration,
                                               kept.plan.makespan * 1e3);
  kept.candidates.push_back(*row);
  if (!faster && !near) return nullptr;
  auto pipeline =
      make_pipeline(prepared, recipe, configuration->first, configuration->second, input_of);
  if (recipe.auto_check) {
    const std::vector<double> ms = time_alike(
        recipe, {{row->configuration, pipeline.get()}, {kept.configuration, &kept_executor}},
        prepared.inputs);
    if (recipe.log) {
      recipe.log(fmt::format("recipe: timed pipeline {} at {:.3f} ms against {} at {:.3f} ms",
                             row->configuration, ms[0], kept.configuration, ms[1]));
    }
    // On a tie the prediction decides.
    if (faster ? ms[0] > ms[1] : ms[0] >= ms[1]) {
      kept.candidates.back().rejected =
          fmt::format("timed {} than {} ({:.3f} ms against {:.3f} ms)",
                      faster ? "slower" : "no faster", kept.configuration, ms[0], ms[1]);
      return nullptr;
    }
    if (prepared.auto_check) prepared.auto_check->kept = row->configuration;
  }
  return pipeline;
}

void write_pipeline_trace(const std::string& path, const StageExecutor& pipeline) {
  write_chrome_trace(path, pipeline.last_trace(), pipeline.task_names(), pipeline.worker_names());
}

void write_pipeline_gantt(const std::string& path, const StageExecutor& pipeline,
                          const std::string& title) {
  const EventTimeline timeline =
      event_timeline(pipeline.last_trace(), pipeline.task_names(), pipeline.worker_names());
  write_gantt_svg(path, timeline.plan, timeline.tasks, timeline.simulation, title);
}

void run_pipeline_instead(PreparedRun& prepared, const RunRecipe& recipe,
                          std::unique_ptr<StageExecutor> pipeline) {
  if (prepared.plan) {
    for (const PlanCandidate& row : prepared.plan->candidates) {
      if (row.family != "pipeline" || !row.rejected.empty()) continue;
      prepared.plan->plan.notes["auto_choice"] = row.configuration;
      if (recipe.log)
        recipe.log(fmt::format("recipe: auto runs the pipeline, {}", row.configuration));
      mark_candidates(prepared.plan->candidates, row.configuration);
      break;
    }
  }
  prepared.parallel = nullptr;
  prepared.sequential = nullptr;
  prepared.pipeline = pipeline.get();
  prepared.executor = std::move(pipeline);
}

}  // namespace cleave
