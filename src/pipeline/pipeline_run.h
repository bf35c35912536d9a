// The "pipeline" strategy of `run`, `bench` and the Session: the model cut into stages, a stream
// of samples pushed through them (stream/stage_executor.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "pipeline/plan_and_run.h"
#include "stream/stage_executor.h"

namespace cleave {

/// The strategy name `--plan pipeline` takes (RunRecipe::strategy).
inline constexpr const char* kPipelineStrategy = "pipeline";
/// RunRecipe::costs that cuts a pipeline by FLOPs, without a cost table (`stream run --stages`).
inline constexpr const char* kFlopsCosts = "flops";

/// The configuration a pipeline runs as, as auto's candidate table names it ("3 stages x 1
/// thread"): what `--plan pipeline --workers stages --threads-per-worker threads` runs.
std::string pipeline_configuration(int stages, int threads);

/// The stages and threads of a configuration pipeline_configuration wrote; nullopt for any
/// other text.
std::optional<std::pair<int, int>> parse_pipeline_configuration(const std::string& text);

/// `stages` stages cut by prepared.costs' seconds at `threads` threads, each stage's kernels on
/// that many threads in prepared.layouts' family, for recipe.samples samples per run (added to
/// prepared.inputs by `input_of` where missing).
std::unique_ptr<StageExecutor> make_pipeline(PreparedRun& prepared, const RunRecipe& recipe,
                                             int stages, int threads,
                                             const std::function<SampleInputs(int)>& input_of);

/// Makes `prepared` run recipe.workers stages, one per worker, each stage's kernels on
/// recipe.threads_per_worker threads, over recipe.samples samples per run: the cut balances
/// recipe.costs' seconds for the nodes, prepared.costs keeps the table, prepared.pipeline
/// the executor and prepared.inputs the samples. Error naming --workers when the model has
/// fewer nodes than stages, --samples when it is below 1.
void prepare_pipeline_run(PreparedRun& prepared, const RunRecipe& recipe,
                          const std::function<SampleInputs(int sample)>& input_of);

/// Auto over the pipeline family, for several samples on this host's cores: adds the best
/// stage cut `row` (by default pipeline_candidate of prepared.costs) to `kept`'s candidates
/// and, when it is predicted faster than `kept` (the plan auto kept, whose executor is
/// `kept_executor`), makes its executor; with recipe.auto_check it is timed against
/// `kept_executor` (time_alike) and returned only when it measures faster, and so is a cut
/// predicted slower by at most kStreamCheckMargin (returned only when it measures strictly
/// faster). Null otherwise, and
/// with recipe.machine (auto planned stages on its devices as a plan of its own).
std::unique_ptr<StageExecutor> pipeline_if_faster(
    PreparedRun& prepared, const RunRecipe& recipe, ModelPlan& kept,
    ExecutorInterface& kept_executor, const std::function<SampleInputs(int sample)>& input_of,
    std::optional<PlanCandidate> row = std::nullopt);

/// The pipeline's last run as a Chrome trace: one event per stage firing, on its worker.
void write_pipeline_trace(const std::string& path, const StageExecutor& pipeline);
/// The same as a Gantt chart (viz/gantt.h): one box per stage firing, a row per worker.
void write_pipeline_gantt(const std::string& path, const StageExecutor& pipeline,
                          const std::string& title);

/// Runs `pipeline` (pipeline_if_faster's choice) instead of the installed plan: the plan stays
/// as the candidate table, with the pipeline's row marked chosen.
void run_pipeline_instead(PreparedRun& prepared, const RunRecipe& recipe,
                          std::unique_ptr<StageExecutor> pipeline);

}  // namespace cleave
