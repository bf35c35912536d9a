// The plan-and-run recipe, including the whole `auto` policy (prediction, then a timed check).
#include "pipeline/plan_and_run.h"

#include <fmt/core.h>

#include <chrono>

#include "frontend/costs.h"
#include "runtime/random_inputs.h"
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

// Medians of a few runs of each, in blocks of A B B A so that neither always runs first.
AutoCheck time_against_sequential(const RunRecipe& recipe, const std::string& strategy,
                                  ExecutorInterface& candidate, ExecutorInterface& sequential,
                                  const std::vector<SampleInputs>& inputs) {
  constexpr int kWarmup = 2;
  constexpr int kRunsPerBlock = 3;
  for (int i = 0; i < kWarmup; ++i) {
    recipe.timer(strategy, candidate, inputs);
    recipe.timer("sequential", sequential, inputs);
  }
  std::vector<double> candidate_ms, sequential_ms;
  const auto time_block = [&](const std::string& name, ExecutorInterface& executor,
                              std::vector<double>& into) {
    for (int i = 0; i < kRunsPerBlock; ++i) into.push_back(recipe.timer(name, executor, inputs));
  };
  time_block(strategy, candidate, candidate_ms);
  time_block("sequential", sequential, sequential_ms);
  time_block("sequential", sequential, sequential_ms);
  time_block(strategy, candidate, candidate_ms);
  return {strategy, median_of(candidate_ms), median_of(sequential_ms)};
}

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
    choice.family = family;
    return choose_costs(g, choice);
  }

  ModelPlanOptions plan_options(const std::string& name) const {
    ModelPlanOptions options;
    options.strategy = name;
    options.workers = recipe.workers;
    options.threads_per_worker = recipe.threads_per_worker;
    options.samples = recipe.samples;
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
      if (run.predicted_with && run.layouts.family != *run.predicted_with) {
        run.predicted_with = run.layouts.family;
        ModelPlan repredicted =
            plan_model(g, costs_of("profile", run.layouts.family), plan_options("sequential"));
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

// Layouts: the convolution family, measured with the threads each worker will run.
void choose_run_layouts(PreparedRun& prepared, const RunRecipe& recipe, bool planned,
                        bool measure_layouts,
                        const std::function<SampleInputs(int sample)>& input_of) {
  LayoutChoice& layouts = prepared.layouts;
  if (!measure_layouts && recipe.layouts != "auto") {
    std::optional<ConvolutionFamily> family = parse_convolution_family(recipe.layouts);
    if (!family) throw Error(fmt::format("unknown convolution family '{}'", recipe.layouts));
    layouts.family = *family;
  }
  if (measure_layouts) {
    prepared.inputs.push_back(input_of(0));
    layouts = layouts_at(prepared.graph, planned ? recipe.threads_per_worker : recipe.threads,
                         prepared.inputs.front(), recipe);
  }
  if (!recipe.plain_layouts) log_line(recipe, fmt::format("recipe: layouts {}", describe(layouts)));
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

// Costs and plan: from the recipe's strategy, or else its plan file.
ModelPlan first_plan(const PlanContext& context, PreparedRun& prepared) {
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
    model_plan = read_model_plan(recipe.plan_file, context.g);
  }
  log_line(recipe,
           fmt::format("recipe: plan {} on {} worker(s) x {} thread(s), predicted {:.3f} ms",
                       model_plan.plan.strategy, model_plan.tasks.machine.size(),
                       model_plan.threads_per_worker, model_plan.plan.makespan * 1e3));
  return model_plan;
}

// Predictions come from one profiling process on a possibly busy machine. When they favour
// a parallel plan, a few timed runs against the sequential plan decide, so that `auto` is
// not slower than the operators one by one with all threads because of one disturbed
// profile.
void check_against_sequential(const PlanContext& context, PreparedRun& prepared,
                              PlannedRun& chosen) {
  const RunRecipe& recipe = context.recipe;
  ModelPlan fallback_plan =
      plan_model(context.g, *prepared.costs, context.plan_options("sequential"));
  fallback_plan.candidates = chosen.model_plan.candidates;
  fallback_plan.plan.notes["auto_choice"] = "sequential";
  PlannedRun fallback = context.prepare(std::move(fallback_plan));
  prepared.auto_check =
      time_against_sequential(recipe, chosen.model_plan.plan.strategy, *chosen.executor,
                              *fallback.executor, prepared.inputs);
  const bool keep = prepared.auto_check->sequential_ms >= prepared.auto_check->candidate_ms;
  log_line(recipe, fmt::format("recipe: timed {} at {:.3f} ms against sequential at {:.3f} ms: "
                               "kept {}",
                               prepared.auto_check->candidate, prepared.auto_check->candidate_ms,
                               prepared.auto_check->sequential_ms,
                               keep ? prepared.auto_check->candidate : "sequential"));
  if (!keep) chosen = std::move(fallback);
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

}  // namespace

double time_one_run(const std::string& /*strategy*/, ExecutorInterface& executor,
                    const std::vector<SampleInputs>& inputs) {
  auto start = std::chrono::steady_clock::now();
  executor.run(inputs);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

PreparedRun prepare_run(Graph graph, const RunRecipe& recipe) {
  PreparedRun prepared;
  prepared.graph = std::move(graph);
  const Graph& g = prepared.graph;
  const std::function<SampleInputs(int sample)> input_of = [&](int sample) {
    return recipe.inputs ? recipe.inputs(g, sample) : random_inputs(g, sample);
  };
  const bool planned = !recipe.strategy.empty() || !recipe.plan_file.empty();
  const bool measure_layouts = recipe.layouts == "auto" && !recipe.plain_layouts;
  choose_run_layouts(prepared, recipe, planned, measure_layouts, input_of);
  if (!planned) {
    make_sequential_executor(prepared, recipe, input_of);
    return prepared;
  }

  const bool auto_plan = recipe.strategy == "auto";
  const PlanContext context{g,
                            recipe,
                            prepared.layouts,
                            prepared.inputs,
                            measure_layouts,
                            auto_plan && recipe.costs == "profile"};
  PlannedRun chosen = context.prepare(first_plan(context, prepared));
  // Sample 0 may already be read (for the layout choice).
  for (int s = static_cast<int>(prepared.inputs.size()); s < chosen.executor->samples(); ++s)
    prepared.inputs.push_back(input_of(s));
  if (auto_plan && recipe.auto_check && chosen.model_plan.plan.strategy != "sequential")
    check_against_sequential(context, prepared, chosen);
  install_plan(prepared, recipe, std::move(chosen));
  return prepared;
}

}  // namespace cleave
