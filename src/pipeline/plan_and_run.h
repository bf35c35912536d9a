// The back half of `run` and `bench`: layouts → costs → plan → check → executor.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_table.h"
#include "frontend/layout_choice.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "machine/machine.h"
#include "runtime/executor.h"
#include "runtime/executor_interface.h"
#include "runtime/parallel_executor.h"
#include "runtime/wait_policy.h"

namespace cleave {

class StageExecutor;  // stream/stage_executor.h

/// Times one run of an executor in milliseconds; `strategy` names the plan it runs: its
/// configuration ("lc, 2 workers x 1 thread"), or "sequential" for the fallback. The recipe's auto
/// check calls it; a test gives fake times.
using RunTimer = std::function<double(const std::string& strategy, ExecutorInterface& executor,
                                      const std::vector<SampleInputs>& inputs)>;

/// The wall-clock time of `executor.run(inputs)`.
double time_one_run(const std::string& strategy, ExecutorInterface& executor,
                    const std::vector<SampleInputs>& inputs);

/// A plan file run by another executor than the thread executor: under mpirun, each rank's
/// part of it on the MPI executor (distributed/rank_part.h). prepare_run reads the plan and
/// makes the executor through it, and measures nothing (a rank may hold only its own weights).
struct PlanRunner {
  /// The plan in the recipe's plan file for the graph; refusals name the file.
  std::function<ModelPlan(const Graph& graph, const std::string& plan_file)> read_plan;
  /// The executor of the plan over the graph, its kernels in the layouts given.
  std::function<std::unique_ptr<ExecutorInterface>(Graph& graph, const ModelPlan& plan,
                                                   const LayoutChoice& layouts)>
      make_executor;
  /// The graph the plan runs over, made from the graph loaded (a spatial split of `--plan
  /// auto` on ranks: its partitioned graph); empty: the graph loaded itself.
  std::function<Graph(Graph loaded)> graph_to_run;
};

/// What to run and how; the options of `cleave run` (and `cleave bench`).
struct RunRecipe {
  /// A strategy of model_strategies() ("auto" among them) to plan with here; or else
  std::string strategy;
  /// a plan file from `cleave plan` to run. Both empty: the sequential executor.
  std::string plan_file;
  /// When set, runs the plan file (`strategy` empty) instead of the thread executor; the
  /// layouts are then `layouts` when it names a family, else the family the plan was costed
  /// in, else blocked.
  std::optional<PlanRunner> plan_runner;
  int threads = 1;  ///< Intra-op threads of the sequential executor.
  /// ExecutorOptions::claim_threads of the sequential executor (a host with no core free).
  int claim_threads = 0;
  bool collect_stats = false;
  bool plain_layouts = false;    ///< No oneDNN blocked layouts at all.
  std::string layouts = "auto";  ///< auto (measured) or a convolution family's name.
  /// Choose layouts again for a plan whose workers run more threads than `threads_per_worker`
  /// (auto's sequential plan), so its kernels are the fastest at that count. `bench` turns it
  /// off so that every variant runs the same kernels.
  bool layouts_follow_plan_threads = true;
  std::string costs = "profile";  ///< profile, static or analytical (for a strategy).
  int workers = 2;
  int threads_per_worker = 1;
  int samples = 1;
  /// The devices to plan on, from a machine file: every family plans on its devices (their
  /// speeds, threads, memories and links; ModelPlanOptions::machine), one worker per device on
  /// this host's threads, instead of `workers` x `threads_per_worker`. With plan "auto" and
  /// more than one device it adds the spatial family: the model split over its devices
  /// (pipeline/spatial_run.h).
  std::optional<Machine> machine;
  /// With plan "auto" and a machine: prepare_run offers the split against the plan
  /// (spatial_if_faster). `cleave bench --families` offers it itself, to time it beside them.
  bool offer_spatial = true;
  /// When set, a plan runs on the cores that other processes leave free (plan_threads_for,
  /// runtime/wait_policy.h) instead of its own counts.
  std::optional<HostLoad> host_load;
  /// With plan "auto": when the predicted choice is parallel, time it, the runner-up
  /// prediction and the sequential plan, and keep the fastest measured.
  bool auto_check = true;
  /// The executor frees loaded weights that its kernels keep packed
  /// (ExecutorOptions::release_packed_weights, ParallelOptions::release_packed_weights), and
  /// PreparedRun::graph keeps no initializer bytes of its own once the executor is made (their
  /// shapes and types stay), so that the memory comes back.
  bool release_packed_weights = false;
  /// Copies of the graph's weight bytes beside PreparedRun::graph that nothing reads while the
  /// run is prepared (a Session's imported model, read only under its lock and replaced once
  /// prepared): the layout choice may set them aside (LayoutChoiceOptions::idle_weight_copies).
  int idle_weight_copies = 0;
  RunTimer timer = time_one_run;
  /// Sample s's graph inputs (given files, else seeded random values).
  std::function<SampleInputs(const Graph& graph, int sample)> inputs;
  std::function<void(const std::string&)> log;  ///< One line per decision; may be empty.
};

/// Medians of a few timed runs (recipe.timer) of each executor, named as the timer sees it:
/// blocks of one warm-up and three timed runs as A B C, C B A, so that none always runs first,
/// each block with only its executor's threads alive (time_in_rounds, which also runs the timer).
/// `on_caller_thread`: TimedRounds::on_caller_thread (executors of MPI ranks).
std::vector<double> time_alike(const RunRecipe& recipe,
                               const std::vector<std::pair<std::string, ExecutorInterface*>>& runs,
                               const std::vector<SampleInputs>& inputs,
                               bool on_caller_thread = false);

/// Timed runs of auto's parallel choice, the runner-up prediction and the sequential plan.
struct AutoCheck {
  std::string candidate;  ///< The predicted choice's strategy.
  std::string candidate_configuration;
  double candidate_ms = 0;
  double sequential_ms = 0;
  std::string runner_up;  ///< The runner-up's configuration; empty when it was not timed.
  double runner_up_ms = 0;
  /// For a stream: a third family's configuration (stream_third_family); empty when not timed.
  std::string third;
  double third_ms = 0;
  std::string kept;  ///< The configuration kept, or "sequential".
  /// On ranks: the spatial split's configuration, when it was timed beside the others.
  std::string split;
  double split_ms = 0;
  /// Why the split was not timed (its outputs differ from the choice's); empty: it was.
  std::string split_rejected;
};

/// The candidate the timed check keeps from the medians of its timed runs, given in the order
/// the candidates are preferred (the predicted choice first, then the runner-up, then
/// sequential): the fastest, the earliest on a tie, so that only a measured gain overturns the
/// prediction. A median that is not a finite number never wins. Error when none is.
std::size_t fastest_measured(const std::vector<double>& medians);

/// The report's "auto_check" object: candidate, candidate_configuration, candidate_ms,
/// sequential_ms, kept (the kept
/// plan's strategy), kept_configuration, and runner_up, runner_up_ms (third, third_ms) where
/// one was timed.
nlohmann::json auto_check_json(const AutoCheck& check, const std::string& kept_strategy);

/// The report's text of the check ("timed lc, ... at 1.234 ms, runner-up ... against
/// sequential at ...: kept ..."), without a label or line end.
std::string auto_check_text(const AutoCheck& check);

/// Everything decided before the timed runs, and the executor that makes them.
struct PreparedRun {
  Graph graph;
  LayoutChoice layouts;  ///< The family the executor's kernels use, and how it was chosen.
  std::optional<CostTable> costs;  ///< When a strategy planned here.
  std::optional<ModelPlan> plan;   ///< When a plan runs.
  /// The family of the profile behind the plan's prediction (plan "auto" with profiled costs).
  std::optional<ConvolutionFamily> predicted_with;
  std::optional<AutoCheck> auto_check;
  std::vector<SampleInputs> inputs;  ///< Per sample of a run.
  std::unique_ptr<ExecutorInterface> executor;
  Executor* sequential = nullptr;        ///< The executor, when it is the sequential one.
  ParallelExecutor* parallel = nullptr;  ///< The executor, when it runs a plan.
  StageExecutor* pipeline = nullptr;     ///< The executor, when it runs pipelined stages.
};

/// Whether auto's timed check runs for `plan`, auto's prediction: for any parallel plan, and
/// for a sequential one on fewer threads than the recipe's cores (its win over every core
/// rests on the profile's few-thread times alone); not for sequential on every core, the plan
/// the check compares against.
bool auto_check_needed(const ModelPlan& plan, const RunRecipe& recipe);

/// The runner-up the timed check runs beside `choice` and sequential on every core: the
/// fastest prediction of another family among choice.alternatives that auto_check_needed, else
/// the fastest of the choice's own family that does; nullptr when none needs the check.
/// `worth_timing`, when given, also leaves out the plans it refuses (ranks: one that runs as a
/// plan already timed).
const ModelPlan* check_runner_up(
    const ModelPlan& choice, const RunRecipe& recipe,
    const std::function<bool(const ModelPlan&)>& worth_timing = nullptr);

/// How much slower than a sequential prediction on every core another family's prediction may
/// be and still be timed beside it for a stream of samples: stream predictions are the weakest
/// (measured / predicted 0.79-1.36 on the corpus), and on squeezenet1_0 data-parallel,
/// predicted 1.15x sequential, measured 0.89x of it.
inline constexpr double kStreamCheckMargin = 1.25;

/// The plan a sequential prediction on every core (the plan auto_check_needed leaves untimed)
/// is timed against for a stream of samples on this host's cores (recipe.samples >= 2, no
/// machine file): check_runner_up's pick, when its prediction is within kStreamCheckMargin of
/// `choice`'s; nullptr otherwise, and for any choice auto_check_needed times anyway.
const ModelPlan* stream_runner_up(const ModelPlan& choice, const RunRecipe& recipe);

/// For a choice timed against its stream_runner_up `second`: the fastest prediction of a third
/// family (neither the choice's nor second's) among choice.alternatives that auto_check_needed,
/// when within kStreamCheckMargin of the choice's; nullptr otherwise. A stream's sequential
/// pick is the fallback itself, so the check still times three plans: on googlenet (Intel,
/// 32 samples) a task plan predicted third, within 3%, measured fastest and was not timed.
const ModelPlan* stream_third_family(const ModelPlan& choice, const RunRecipe& recipe,
                                     const ModelPlan& second);

/// Auto's timed check and the plan it keeps.
struct CheckedChoice {
  AutoCheck check;
  ModelPlan kept;  ///< The predicted choice, the runner-up or sequential on every core.
};

/// Auto's timed check, the one prepare_run makes, of a run prepared with recipe.auto_check
/// off (`cleave bench --families` times the table's rows and shows what `run --plan auto`
/// would keep): the prepared plan, the runner-up prediction and the sequential plan timed
/// alike through recipe.timer (a sequential prediction on every core and its stream_runner_up,
/// for a stream). Nullopt where neither auto_check_needed nor stream_runner_up says a check
/// runs. The
/// prepared run is not changed; its graph must keep its weights (recipe.release_packed_weights
/// off). Error when it was not planned here (no plan or costs).
std::optional<CheckedChoice> time_auto_check(const PreparedRun& prepared, const RunRecipe& recipe);

/// The recipe on a loaded graph (a Session calls it per input shape), top to bottom: layouts,
/// costs, plan, check, executor; logging each decision through recipe.log.
///
/// `auto` is one policy wherever it is used: plan_model picks the fastest prediction, and
/// unless recipe.auto_check is off, a pick that auto_check_needed is timed against the runner-up
/// prediction and the sequential plan (two warm-up runs each, then blocks of three runs as A B C C
/// B A; medians) and the fastest kept, the prediction on a tie; for a stream, a sequential pick on
/// every core is timed against its stream_runner_up. For several samples the pipelined
/// stages, and with recipe.machine a spatial split, are then offered in turn against what is
/// kept (predicted faster, and timed no slower, each replaces it).
PreparedRun prepare_run(Graph graph, const RunRecipe& recipe);

}  // namespace cleave
