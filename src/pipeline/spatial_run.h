// `auto`'s spatial family run in this process: the split search's best split as a partitioned
// graph and a Plan of one worker per machine, on the thread executor.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "machine/machine.h"
#include "pipeline/plan_and_run.h"
#include "runtime/parallel_executor.h"
#include "spatial/partitioned_graph.h"
#include "spatial/split_model.h"

namespace cleave {

/// The spatial row of auto's table and, when a split was made, the split and its plan.
struct SpatialCandidate {
  /// Family "spatial", configuration "split over 2 devices along h"; predicted_seconds is the
  /// simulated makespan of `plan` (+inf without a split, and `rejected` then says why).
  PlanCandidate row;
  std::shared_ptr<const PartitionedGraph> split;  ///< Null without a split.
  /// The split's plan over split->graph: one worker per machine, each running its tasks for
  /// the samples one after another, on the split's cost table (split_cost_table).
  std::optional<ModelPlan> plan;
  /// What made the split, to make it again from the same graph (split_recipe_json; the ranks
  /// of `--plan auto`): the search's options with the kept split's dim and layers.
  SplitModelOptions options;
};

/// The split's copies at this CPU's memory bandwidth and per-op cost (the analytical costs'
/// probe, once per process), where `costs` are seconds of this CPU (profile, analytical);
/// static weights are not. The table's spatial row and `cleave split` price them alike.
void price_split_copies(const CostTable& costs, SplitCostModel& cost);

/// The simulator's prediction of a split on its machines' ranks: the plan of one worker per
/// machine on the split's own cost table (piece_costs: its pieces profiled as the model was
/// where `costs` are a profile, else each whole node's share), rank 0 handing the inputs out
/// and gathering the outputs. The spatial row of auto's table and `cleave split --machine`'s
/// report both price a split with this, so that a bench running the split folder compares
/// its time with the prediction of the split it ran.
struct SplitPrediction {
  ModelPlan plan;
  CostTable costs;
  std::string how;  ///< "pieces profiled", or "pieces priced by share" (and why).
};
SplitPrediction predict_split(const Graph& graph, const SplitResult& best,
                              const SplitModelOptions& options, const CostTable& costs,
                              const Machine& machine, int samples);

/// The split search's best split of `graph` along H over `machine`'s devices (the first 8 of
/// a larger machine, the row's cut_short says so) for `samples` samples, priced on `costs`.
/// Errors of the search become the row's rejection, never a throw.
SpatialCandidate spatial_candidate(const Graph& graph, const CostTable& costs,
                                   const Machine& machine, int samples);

/// The thread executor of a candidate's split: a worker per machine with its plan's threads
/// per worker, kernels of `family`, folded onto fewer threads where recipe.host_load says
/// other processes hold cores (plan_threads_for). The outputs are `graph`'s, in its order.
std::unique_ptr<ParallelExecutor> make_spatial_executor(const SpatialCandidate& candidate,
                                                        const RunRecipe& recipe,
                                                        ConvolutionFamily family);

/// Empty when `got`, a split's outputs per sample, are `want`'s within float tolerance (sums in
/// another order differ in the last bits; a region computed from the wrong rows by the values
/// themselves), else how they differ, naming `want_name`. A split replaces nothing whose
/// outputs it does not give.
std::string split_outputs_differ(const std::vector<std::vector<Tensor>>& got,
                                 const std::vector<std::vector<Tensor>>& want,
                                 const std::string& want_name);

/// What auto keeps so far, which a split has to beat.
struct KeptRun {
  std::string configuration;
  double predicted_seconds = 0;
  ExecutorInterface* executor = nullptr;
  /// Its row in the table when it replaced the plan (the pipeline); -1 for the plan itself.
  int row = -1;
};

/// A split auto runs instead of the plan.
struct SpatialRun {
  ModelPlan plan;  ///< SpatialCandidate::plan.
  std::unique_ptr<ParallelExecutor> executor;
};

/// Auto over the spatial family (recipe.machine of more than one device): adds the split's row
/// (`offered`, by default spatial_candidate of prepared.costs) to `table`'s candidates and, when
/// it is predicted faster than `kept`, makes its executor and runs it once beside
/// kept.executor: outputs that differ beyond float tolerance, or a failed run, reject it. With
/// recipe.auto_check it is then timed against kept.executor (time_alike) and returned only when
/// it measures no slower. Else the row says why not ("not faster than ...", "slower when timed
/// than ...", "the split is not run: ...") and nullopt.
std::optional<SpatialRun> spatial_if_faster(PreparedRun& prepared, const RunRecipe& recipe,
                                            ModelPlan& table, const KeptRun& kept,
                                            const std::function<SampleInputs(int sample)>& input_of,
                                            std::optional<SpatialCandidate> offered = std::nullopt);

/// Runs `run` (spatial_if_faster's choice) instead of the installed plan: prepared.plan becomes
/// the split's plan (family "spatial") carrying the table, its row marked chosen.
void run_spatial_instead(PreparedRun& prepared, const RunRecipe& recipe, SpatialRun run);

}  // namespace cleave
