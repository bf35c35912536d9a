// The plan-and-run recipe, including the whole `auto` policy (prediction, then a timed check).
#include "pipeline/plan_and_run.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <utility>

#include "frontend/costs.h"
#include "pipeline/pipeline_run.h"
#include "pipeline/spatial_run.h"
#include "runtime/random_inputs.h"
#include "runtime/timed_rounds.h"
#include "runtime/winograd_budget.h"
#include "support/timing.h"

namespace cleave {

namespace {

// The executors' copies of the graph hold the bytes now; with this one's gone, a weight's bytes
// go when its executor lets go of them.
void drop_initializer_bytes(Graph& graph) {
  for (ValueId id : graph.initializers()) graph.value(id).initializer->bytes.reset();
}

void log_line(const RunRecipe& recipe, const std::string& line) {
  if (recipe.log) recipe.log(line);
}

}  // namespace

std::vector<double> time_alike(const RunRecipe& recipe,
                               const std::vector<std::pair<std::string, ExecutorInterface*>>& runs,
                               const std::vector<SampleInputs>& inputs, bool on_caller_thread) {
  // Each block's untimed run comes first: the executors' first runs prepare their kernels. One
  // is enough here: of three timed runs the median is past the slower second run of a round.
  const TimedRounds kBlocks{0, 2, 3, on_caller_thread, 1};
  std::vector<ExecutorInterface*> executors;
  for (const auto& [name, executor] : runs) executors.push_back(executor);
  const std::vector<std::vector<double>> ms = time_in_rounds(
      executors, kBlocks,
      [&](std::size_t r) { return recipe.timer(runs[r].first, *runs[r].second, inputs); });
  std::vector<double> medians;
  for (const std::vector<double>& times : ms) medians.push_back(median_of(times));
  return medians;
}

namespace {

// A plan with the family its kernels use and its executor.
struct PlannedRun {
  ModelPlan model_plan;
  LayoutChoice layouts;
  std::optional<ConvolutionFamily> predicted_with;
  std::unique_ptr<ParallelExecutor> executor;
};

LayoutChoice layouts_at(const Graph& graph, int threads, const SampleInputs& inputs,
                        const RunRecipe& recipe) {
  ExecutorOptions options;
  options.threads = threads;
  LayoutChoiceOptions choice_options;
  choice_options.progress = recipe.log;
  choice_options.idle_weight_copies = recipe.idle_weight_copies;
  return choose_layouts(graph, options, inputs, choice_options);
}

// What the planned steps share: the graph, the recipe, the layouts and inputs measured for them.
struct PlanContext {
  const Graph& g;
  const RunRecipe& recipe;
  const LayoutChoice& layouts;
  const std::vector<SampleInputs>& inputs;
  bool measure_layouts = false;
  bool profiled = false;

  CostTable costs_of(const std::string& source, ConvolutionFamily family) const {
    CostChoice choice;
    choice.source = source;
    choice.max_threads = recipe.workers * recipe.threads_per_worker;
    // The machine file's devices are what the plans run on: their threads are measured too.
    if (recipe.machine)
      choice.max_threads = std::max(choice.max_threads, profile_threads_for(*recipe.machine));
    choice.family = family;
    return choose_costs(g, choice);
  }

  ModelPlanOptions plan_options(const std::string& name) const {
    ModelPlanOptions options;
    options.strategy = name;
    options.workers = recipe.workers;
    options.threads_per_worker = recipe.threads_per_worker;
    options.samples = recipe.samples;
    // Every family plans on a machine file's devices (speeds, threads, memories, links).
    options.machine = recipe.machine;
    return options;
  }

  // Chooses the plan's family and makes its executor. A plan of one worker with all threads
  // runs that worker's kernels at its thread count, which may favour another family than one
  // thread per worker did; its prediction then comes from a profile of that family, so that
  // it times the kernels that will run.
  PlannedRun prepare(ModelPlan plan) const {
    PlannedRun run;
    run.layouts = layouts;
    const int workers = static_cast<int>(plan.tasks.machine.size());
    const PlanThreads fit =
        recipe.host_load ? plan_threads_for(workers, plan.threads_per_worker, *recipe.host_load)
                         : PlanThreads{workers, plan.threads_per_worker};
    if (fit.threads != workers || fit.threads_per_worker != plan.threads_per_worker) {
      log_line(recipe,
               fmt::format("recipe: {} other runnable thread(s) on {} core(s): the plan's "
                           "{} worker(s) x {} thread(s) run on {} thread(s) x {}",
                           recipe.host_load->other_runnable, recipe.host_load->cores, workers,
                           plan.threads_per_worker, fit.threads, fit.threads_per_worker));
    }
    if (profiled && !recipe.plain_layouts) run.predicted_with = layouts.family;
    if (measure_layouts && recipe.layouts_follow_plan_threads &&
        fit.threads_per_worker != recipe.threads_per_worker) {
      run.layouts = layouts_at(g, fit.threads_per_worker, inputs.front(), recipe);
      // Only a one-worker plan is predicted again: re-planning any other as "sequential"
      // would replace it (the runner-up of the timed check among them).
      if (workers == 1 && run.predicted_with && run.layouts.family != *run.predicted_with) {
        run.predicted_with = run.layouts.family;
        // At the plan's own threads: auto's sequential row may use fewer than every core.
        ModelPlanOptions same_threads = plan_options("sequential");
        if (!recipe.machine) {
          same_threads.workers = 1;
          same_threads.threads_per_worker = plan.threads_per_worker;
        }
        ModelPlan repredicted =
            plan_model(g, costs_of("profile", run.layouts.family), same_threads);
        repredicted.candidates = std::move(plan.candidates);
        repredicted.plan.notes["auto_choice"] = plan.plan.notes["auto_choice"];
        repredicted.planning_seconds = plan.planning_seconds;
        plan = std::move(repredicted);
      }
    }
    ParallelOptions options;
    options.threads = fit.threads;
    options.threads_per_worker = fit.threads_per_worker;
    options.blocked_layouts = !recipe.plain_layouts;
    options.convolution_family = run.layouts.family;
    options.release_packed_weights = recipe.release_packed_weights;
    run.executor = std::make_unique<ParallelExecutor>(g, plan.tasks, plan.plan, options);
    run.model_plan = std::move(plan);
    return run;
  }
};

ConvolutionFamily family_named(const std::string& name) {
  std::optional<ConvolutionFamily> family = parse_convolution_family(name);
  if (!family) throw Error(fmt::format("unknown convolution family '{}'", name));
  return *family;
}

// The family, and in the Winograd family which convolutions its weight budget and small-map
// rule (on kernels of `threads` intra-op threads) leave direct and the bytes that saves.
void log_layouts(const RunRecipe& recipe, const Graph& graph, const LayoutChoice& layouts,
                 int threads) {
  if (recipe.plain_layouts) return;
  log_line(recipe, fmt::format("recipe: layouts {}", describe(layouts)));
  if (layouts.family != ConvolutionFamily::kWinograd || !recipe.log) return;
  const WinogradSelection selection =
      select_winograd(graph, winograd_budget_from_environment(), threads);
  log_line(recipe, fmt::format("recipe: winograd budget: {}; margin against blocked {:.1f}%",
                               describe(selection), winograd_margin(selection) * 100));
  if (!selection.direct.empty() || !selection.small_maps.empty()) {
    log_line(recipe, fmt::format("recipe: direct (over the Winograd budget or on small maps): {}",
                                 fmt::join(direct_node_names(graph, selection), ", ")));
  }
}

// Layouts: the convolution family, measured with the threads each worker will run.
void choose_run_layouts(PreparedRun& prepared, const RunRecipe& recipe, bool planned,
                        bool measure_layouts,
                        const std::function<SampleInputs(int sample)>& input_of) {
  LayoutChoice& layouts = prepared.layouts;
  if (!measure_layouts && recipe.layouts != "auto") {
    layouts.family = family_named(recipe.layouts);
  }
  const int threads = planned ? recipe.threads_per_worker : recipe.threads;
  if (measure_layouts) {
    prepared.inputs.push_back(input_of(0));
    layouts = layouts_at(prepared.graph, threads, prepared.inputs.front(), recipe);
  }
  log_layouts(recipe, prepared.graph, layouts, threads);
}

void make_sequential_executor(PreparedRun& prepared, const RunRecipe& recipe,
                              const std::function<SampleInputs(int sample)>& input_of) {
  if (prepared.inputs.empty()) prepared.inputs.push_back(input_of(0));
  ExecutorOptions options;
  options.threads = recipe.threads;
  options.claim_threads = recipe.claim_threads;
  options.collect_stats = recipe.collect_stats;
  options.blocked_layouts = !recipe.plain_layouts;
  options.convolution_family = prepared.layouts.family;
  options.release_packed_weights = recipe.release_packed_weights;
  auto executor = std::make_unique<Executor>(prepared.graph, options);
  if (recipe.release_packed_weights) drop_initializer_bytes(prepared.graph);
  prepared.sequential = executor.get();
  prepared.executor = std::move(executor);
  log_line(recipe,
           recipe.claim_threads >= 2
               ? fmt::format("recipe: sequential executor, {} thread(s), convolutions in parts "
                             "claimed by {} threads",
                             recipe.threads, recipe.claim_threads)
               : fmt::format("recipe: sequential executor, {} thread(s)", recipe.threads));
}

void log_plan(const RunRecipe& recipe, const ModelPlan& model_plan) {
  log_line(recipe,
           fmt::format("recipe: plan {} on {} worker(s) x {} thread(s), predicted {:.3f} ms",
                       model_plan.plan.strategy, model_plan.tasks.machine.size(),
                       model_plan.threads_per_worker, model_plan.plan.makespan * 1e3));
}

// Costs and plan: from the recipe's strategy, or else its plan file.
ModelPlan first_plan(const PlanContext& context, PreparedRun& prepared,
                     std::optional<ModelPlan> from_file) {
  const RunRecipe& recipe = context.recipe;
  ModelPlan model_plan;
  if (!recipe.strategy.empty()) {
    // The profile times the kernels the plan will run: the same convolution family.
    prepared.costs = context.costs_of(recipe.costs, context.layouts.family);
    log_line(recipe, fmt::format("recipe: {} costs", prepared.costs->source));
    model_plan = plan_model(context.g, *prepared.costs, context.plan_options(recipe.strategy));
    for (const PlanCandidate& candidate : model_plan.candidates) {
      log_line(recipe, fmt::format("recipe: auto predicts {} at {:.3f} ms", candidate.strategy,
                                   candidate.predicted_seconds * 1e3));
    }
  } else {
    model_plan = from_file ? std::move(*from_file) : read_model_plan(recipe.plan_file, context.g);
  }
  log_plan(recipe, model_plan);
  return model_plan;
}

// The plan file on the recipe's plan runner: the family named, else the plan's, else blocked.
void run_plan_elsewhere(PreparedRun& prepared, const RunRecipe& recipe) {
  const PlanRunner& runner = *recipe.plan_runner;
  if (runner.graph_to_run) prepared.graph = runner.graph_to_run(std::move(prepared.graph));
  ModelPlan model_plan = runner.read_plan(prepared.graph, recipe.plan_file);
  log_plan(recipe, model_plan);
  if (recipe.layouts != "auto") {
    prepared.layouts.family = family_named(recipe.layouts);
  } else if (model_plan.convolution_family) {
    prepared.layouts.family = *model_plan.convolution_family;
  }
  log_layouts(recipe, prepared.graph, prepared.layouts, model_plan.threads_per_worker);
  prepared.executor = runner.make_executor(prepared.graph, model_plan, prepared.layouts);
  // The executor holds its weights now; this copy would keep them alive once packed.
  drop_initializer_bytes(prepared.graph);
  prepared.plan = std::move(model_plan);
}

// Predictions come from one profiling process on a possibly busy machine. When they favour
// a parallel plan, a few timed runs of it, the runner-up prediction and the sequential plan
// decide, so that `auto` is not slower than the operators one by one with all threads, nor
// than its second guess, because of one disturbed profile. The check's times, the plans it made
// to time beside the choice, and which it kept.
struct TimedCandidates {
  AutoCheck check;
  std::optional<PlannedRun> runner_up;
  std::optional<PlannedRun> third;     ///< A stream's third family (stream_third_family).
  std::optional<PlannedRun> fallback;  ///< None where the choice is the sequential plan itself.
  /// The run kept: an index into others(), or -1 for the choice itself.
  int kept = -1;

  // The timed plans beside the choice, in the order they are preferred on a tie.
  std::array<std::optional<PlannedRun>*, 3> others() { return {&runner_up, &third, &fallback}; }
  // The plan kept, or null for the choice.
  const ModelPlan* kept_plan() {
    return kept < 0 ? nullptr : &(*others()[static_cast<std::size_t>(kept)])->model_plan;
  }
};

// Whether auto's pick is timed at all: any pick the check needs, and for a stream a sequential
// pick with another family predicted near it.
bool check_runs(const ModelPlan& choice, const RunRecipe& recipe) {
  return auto_check_needed(choice, recipe) || stream_runner_up(choice, recipe) != nullptr;
}

TimedCandidates time_top_candidates(const PlanContext& context, const CostTable& costs,
                                    const ModelPlan& choice, ExecutorInterface& choice_executor,
                                    const std::vector<SampleInputs>& inputs) {
  const RunRecipe& recipe = context.recipe;
  const auto as_choice = [&](ModelPlan plan, const std::string& why) {
    plan.candidates = choice.candidates;
    plan.plan.notes["auto_choice"] = why;
    // Every candidate was priced from the same table: the plan kept says where it came from
    // (auto's alternatives are made without plan_model's notes).
    for (const char* note : {"profile_cache", "profile_level", "cost_source"}) {
      if (choice.plan.notes.contains(note) && !plan.plan.notes.contains(note))
        plan.plan.notes[note] = choice.plan.notes[note];
    }
    return context.prepare(std::move(plan));
  };
  // A sequential pick on every core is the fallback itself (timed for a stream only, where a
  // third family near it takes the fallback's place: three plans timed either way).
  const bool choice_is_fallback = !auto_check_needed(choice, recipe);
  const ModelPlan* second =
      choice_is_fallback ? stream_runner_up(choice, recipe) : check_runner_up(choice, recipe);
  const ModelPlan* third =
      choice_is_fallback && second ? stream_third_family(choice, recipe, *second) : nullptr;
  TimedCandidates timed;
  if (second) timed.runner_up = as_choice(*second, second->plan.strategy);
  if (third) timed.third = as_choice(*third, third->plan.strategy);
  if (!choice_is_fallback) {
    timed.fallback =
        as_choice(plan_model(context.g, costs, context.plan_options("sequential")), "sequential");
  }
  AutoCheck& check = timed.check;
  check.candidate = choice.plan.strategy;
  check.candidate_configuration = choice.configuration;
  std::vector<std::pair<std::string, ExecutorInterface*>> runs = {
      {check.candidate_configuration, &choice_executor}};
  std::vector<int> slot = {-1};  // Of each run: -1 the choice, else its index in others().
  for (int i = 0; i < 3; ++i) {
    std::optional<PlannedRun>& run = *timed.others()[static_cast<std::size_t>(i)];
    if (!run) continue;
    runs.emplace_back(&run == &timed.fallback ? "sequential" : run->model_plan.configuration,
                      run->executor.get());
    slot.push_back(i);
  }
  const std::vector<double> ms = time_alike(recipe, runs, inputs);
  check.candidate_ms = ms.front();
  check.sequential_ms = choice_is_fallback ? ms.front() : ms.back();
  if (timed.runner_up) {
    check.runner_up = runs[1].first;
    check.runner_up_ms = ms[1];
  }
  if (timed.third) {
    check.third = runs[2].first;
    check.third_ms = ms[2];
  }
  const std::size_t best = fastest_measured(ms);
  check.kept = runs[best].first;
  timed.kept = slot[best];
  log_line(recipe, "recipe: " + auto_check_text(check));
  return timed;
}

// The run the check kept, moved out of `timed` (the choice's own where it kept the choice).
void keep_checked(TimedCandidates& timed, PlannedRun& chosen) {
  if (timed.kept >= 0) chosen = std::move(**timed.others()[static_cast<std::size_t>(timed.kept)]);
}

void check_top_candidates(const PlanContext& context, PreparedRun& prepared, PlannedRun& chosen) {
  TimedCandidates timed = time_top_candidates(context, *prepared.costs, chosen.model_plan,
                                              *chosen.executor, prepared.inputs);
  prepared.auto_check = std::move(timed.check);
  keep_checked(timed, chosen);
}

// Profiles and layout choices read the weights; from here only the executors' copies of the
// graph hold them (the one not kept went with the fallback or the chosen run).
void install_plan(PreparedRun& prepared, const RunRecipe& recipe, PlannedRun chosen) {
  if (recipe.release_packed_weights) drop_initializer_bytes(prepared.graph);
  prepared.layouts = chosen.layouts;
  prepared.predicted_with = chosen.predicted_with;
  prepared.parallel = chosen.executor.get();
  prepared.executor = std::move(chosen.executor);
  prepared.plan = std::move(chosen.model_plan);
  log_line(recipe,
           fmt::format("recipe: thread executor, {} worker(s) x {} thread(s) on {} "
                       "thread(s), {} sample(s)",
                       prepared.plan->tasks.machine.size(), prepared.parallel->threads_per_worker(),
                       prepared.parallel->threads(), prepared.parallel->samples()));
}

// What auto runs before the spatial family is offered: the pipeline where it replaced the
// plan (its row is the table's unrejected pipeline row), else the plan.
KeptRun kept_so_far(const ModelPlan& plan, ExecutorInterface& plan_executor,
                    StageExecutor* pipeline) {
  if (pipeline) {
    for (std::size_t r = 0; r < plan.candidates.size(); ++r) {
      const PlanCandidate& row = plan.candidates[r];
      if (row.family == "pipeline" && row.rejected.empty())
        return {row.configuration, row.predicted_seconds, pipeline, static_cast<int>(r)};
    }
  }
  return {plan.configuration, plan.plan.makespan, &plan_executor, -1};
}

}  // namespace

double time_one_run(const std::string& /*strategy*/, ExecutorInterface& executor,
                    const std::vector<SampleInputs>& inputs) {
  auto start = std::chrono::steady_clock::now();
  executor.run(inputs);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::size_t fastest_measured(const std::vector<double>& medians) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < medians.size(); ++i) {
    if (!std::isfinite(medians[i])) continue;
    if (!best || medians[i] < medians[*best]) best = i;
  }
  if (!best) {
    throw Error(fmt::format("auto's timed check measured no candidate (medians: {})",
                            fmt::join(medians, ", ")));
  }
  return *best;
}

nlohmann::json auto_check_json(const AutoCheck& check, const std::string& kept_strategy) {
  nlohmann::json json = {{"candidate", check.candidate},
                         {"candidate_configuration", check.candidate_configuration},
                         {"candidate_ms", check.candidate_ms},
                         {"sequential_ms", check.sequential_ms},
                         {"kept", kept_strategy},
                         {"kept_configuration", check.kept}};
  if (!check.runner_up.empty()) {
    json["runner_up"] = check.runner_up;
    json["runner_up_ms"] = check.runner_up_ms;
  }
  if (!check.third.empty()) {
    json["third"] = check.third;
    json["third_ms"] = check.third_ms;
  }
  if (!check.split.empty()) {
    json["split"] = check.split;
    json["split_ms"] = check.split_ms;
    if (!check.split_rejected.empty()) json["split_rejected"] = check.split_rejected;
  }
  return json;
}

std::string auto_check_text(const AutoCheck& check) {
  return fmt::format(
      "timed {} at {:.3f} ms{}{}{} against sequential at {:.3f} ms: kept {}",
      check.candidate_configuration, check.candidate_ms,
      check.runner_up.empty()
          ? std::string()
          : fmt::format(", runner-up {} at {:.3f} ms", check.runner_up, check.runner_up_ms),
      check.third.empty() ? std::string()
                          : fmt::format(", third {} at {:.3f} ms", check.third, check.third_ms),
      check.split.empty() ? std::string()
      : check.split_rejected.empty()
          ? fmt::format(", split {} at {:.3f} ms", check.split, check.split_ms)
          : fmt::format(", split {} not timed ({})", check.split, check.split_rejected),
      check.sequential_ms, check.kept);
}

bool auto_check_needed(const ModelPlan& plan, const RunRecipe& recipe) {
  return plan.plan.strategy != "sequential" ||
         (!recipe.machine && plan.threads_per_worker < recipe.workers * recipe.threads_per_worker);
}

const ModelPlan* stream_runner_up(const ModelPlan& choice, const RunRecipe& recipe) {
  if (recipe.samples < 2 || recipe.machine || auto_check_needed(choice, recipe)) return nullptr;
  const ModelPlan* second = check_runner_up(choice, recipe);
  if (!second || second->plan.makespan > kStreamCheckMargin * choice.plan.makespan) return nullptr;
  return second;
}

const ModelPlan* stream_third_family(const ModelPlan& choice, const RunRecipe& recipe,
                                     const ModelPlan& second) {
  if (stream_runner_up(choice, recipe) == nullptr) return nullptr;
  for (const ModelPlan& plan : choice.alternatives) {
    if (plan.family == choice.family || plan.family == second.family) continue;
    if (!auto_check_needed(plan, recipe)) continue;
    // Fastest first: the first of a third family is its best.
    return plan.plan.makespan <= kStreamCheckMargin * choice.plan.makespan ? &plan : nullptr;
  }
  return nullptr;
}

const ModelPlan* check_runner_up(const ModelPlan& choice, const RunRecipe& recipe,
                                 const std::function<bool(const ModelPlan&)>& worth_timing) {
  // Another planner of the choice's family often predicts the same schedule (lc and clone
  // on shufflenet, 2.398 ms both): timing it says little that timing the choice did not, where
  // the best of another family (sequential on one thread) is the plan the check would miss.
  const ModelPlan* same_family = nullptr;
  for (const ModelPlan& plan : choice.alternatives) {
    if (!auto_check_needed(plan, recipe) || (worth_timing && !worth_timing(plan))) continue;
    if (plan.family != choice.family) return &plan;
    if (!same_family) same_family = &plan;
  }
  return same_family;
}

std::optional<CheckedChoice> time_auto_check(const PreparedRun& prepared, const RunRecipe& recipe) {
  if (!prepared.plan || !prepared.costs)
    throw Error("auto's timed check needs a run planned here (a strategy and its costs)");
  if (!check_runs(*prepared.plan, recipe)) return std::nullopt;
  const PlanContext context{prepared.graph,
                            recipe,
                            prepared.layouts,
                            prepared.inputs,
                            recipe.layouts == "auto" && !recipe.plain_layouts,
                            recipe.strategy == "auto" && recipe.costs == "profile"};
  // The run's own executor where it runs the plan; else (the pipeline replaced it) its own.
  std::optional<PlannedRun> own;
  if (!prepared.parallel) own = context.prepare(*prepared.plan);
  ExecutorInterface& executor = own ? *own->executor : *prepared.parallel;
  TimedCandidates timed =
      time_top_candidates(context, *prepared.costs, *prepared.plan, executor, prepared.inputs);
  const ModelPlan* kept = timed.kept_plan();
  return CheckedChoice{std::move(timed.check), kept ? *kept : *prepared.plan};
}

PreparedRun prepare_run(Graph graph, const RunRecipe& recipe) {
  PreparedRun prepared;
  prepared.graph = std::move(graph);
  if (recipe.plan_runner && recipe.strategy.empty()) {
    run_plan_elsewhere(prepared, recipe);
    return prepared;
  }
  const Graph& g = prepared.graph;
  const std::function<SampleInputs(int sample)> input_of = [&](int sample) {
    return recipe.inputs ? recipe.inputs(g, sample) : random_inputs(g, sample);
  };
  const bool planned = !recipe.strategy.empty() || !recipe.plan_file.empty();
  // A plan file that records the convolution family it was predicted in (or generated in, by
  // codegen) runs that family, as ranks do: what runs is what was predicted, not a family
  // measured again now, which a busy host may tip to another.
  std::optional<ModelPlan> from_file;
  if (recipe.strategy.empty() && !recipe.plan_file.empty())
    from_file = read_model_plan(recipe.plan_file, g);
  const bool recorded = from_file && from_file->convolution_family && recipe.layouts == "auto" &&
                        !recipe.plain_layouts;
  if (recorded) prepared.layouts.family = *from_file->convolution_family;
  const bool measure_layouts = recipe.layouts == "auto" && !recipe.plain_layouts && !recorded;
  choose_run_layouts(prepared, recipe, planned, measure_layouts, input_of);
  if (!planned) {
    make_sequential_executor(prepared, recipe, input_of);
    return prepared;
  }
  if (recipe.strategy == kPipelineStrategy) {
    prepare_pipeline_run(prepared, recipe, input_of);
    return prepared;
  }

  const bool auto_plan = recipe.strategy == "auto";
  const PlanContext context{g,
                            recipe,
                            prepared.layouts,
                            prepared.inputs,
                            measure_layouts,
                            auto_plan && recipe.costs == "profile"};
  PlannedRun chosen = context.prepare(first_plan(context, prepared, std::move(from_file)));
  // Sample 0 may already be read (for the layout choice).
  for (int s = static_cast<int>(prepared.inputs.size()); s < chosen.executor->samples(); ++s)
    prepared.inputs.push_back(input_of(s));
  if (auto_plan && recipe.auto_check && check_runs(chosen.model_plan, recipe))
    check_top_candidates(context, prepared, chosen);
  // Made before install_plan lets go of the graph's weights (its stages hold their own).
  std::unique_ptr<StageExecutor> pipeline =
      auto_plan
          ? pipeline_if_faster(prepared, recipe, chosen.model_plan, *chosen.executor, input_of)
          : nullptr;
  std::optional<SpatialRun> spatial;
  if (auto_plan && recipe.machine && recipe.offer_spatial) {
    spatial = spatial_if_faster(prepared, recipe, chosen.model_plan,
                                kept_so_far(chosen.model_plan, *chosen.executor, pipeline.get()),
                                input_of);
    if (spatial) pipeline.reset();
  }
  install_plan(prepared, recipe, std::move(chosen));
  if (pipeline) run_pipeline_instead(prepared, recipe, std::move(pipeline));
  if (spatial) run_spatial_instead(prepared, recipe, std::move(*spatial));
  return prepared;
}

}  // namespace cleave
