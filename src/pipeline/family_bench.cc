// `cleave bench --families`: auto's table planned once, each family's best plan timed alike.
#include "pipeline/family_bench.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "frontend/candidate_costs.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "pipeline/family_search.h"
#include "pipeline/pipeline_run.h"
#include "pipeline/session.h"
#include "pipeline/spatial_run.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "spatial/split_bench.h"
#include "support/timing.h"

namespace cleave {

namespace {

// Hybrid plans are task plans with unequal threads; they are compared as a family of their own.
std::string family_key(const ModelPlan& plan) {
  return plan.plan.notes.contains("hybrid_threads") ? "hybrid" : plan.family;
}

// The fastest prediction of each family among the chosen plan and its alternatives, and the
// chosen plan itself even where a faster prediction of its family was passed over (as less
// risky): auto's choice is what the table is read against.
std::vector<const ModelPlan*> best_of_each_family(const ModelPlan& chosen) {
  std::map<std::string, const ModelPlan*> best;
  const auto offer = [&](const ModelPlan& plan) {
    const ModelPlan*& kept = best[family_key(plan)];
    if (!kept || plan.plan.makespan < kept->plan.makespan) kept = &plan;
  };
  offer(chosen);
  for (const ModelPlan& plan : chosen.alternatives) offer(plan);
  std::vector<const ModelPlan*> plans;
  for (const auto& [key, plan] : best) plans.push_back(plan);
  if (std::find(plans.begin(), plans.end(), &chosen) == plans.end()) plans.push_back(&chosen);
  std::stable_sort(plans.begin(), plans.end(), [](const ModelPlan* a, const ModelPlan* b) {
    return a->plan.makespan < b->plan.makespan;
  });
  return plans;
}

// Plans of one family and configuration run alike (the check's copies of the table's plans).
bool same_plan(const ModelPlan& a, const ModelPlan& b) {
  return a.family == b.family && a.configuration == b.configuration;
}

// A plan's row in the table (by configuration): what its prediction used.
CandidateCosts costs_of(const ModelPlan& chosen, const std::string& configuration) {
  for (const PlanCandidate& candidate : chosen.candidates)
    if (candidate.configuration == configuration) return candidate.costs;
  return {};
}

// The pipelined stages this host runs (`--plan pipeline`'s configuration): the fastest predicted.
const PlanCandidate* runnable_pipeline(const ModelPlan& chosen) {
  const PlanCandidate* best = nullptr;
  for (const PlanCandidate& candidate : chosen.candidates) {
    if (candidate.family != "pipeline" || !parse_pipeline_configuration(candidate.configuration))
      continue;
    if (!best || candidate.predicted_seconds < best->predicted_seconds) best = &candidate;
  }
  return best;
}

// Stages auto did not plan as a task plan run through their own command, and a split that
// could not be made says why: one row per family.
void add_unrunnable_rows(const ModelPlan& chosen, std::vector<FamilyBenchRow>& rows) {
  std::map<std::string, const PlanCandidate*> best;
  for (const PlanCandidate& candidate : chosen.candidates) {
    if (candidate.family == "pipeline") {
      // Stages on a machine's devices are a task plan of auto's, timed with the others.
      const bool timed = std::any_of(rows.begin(), rows.end(), [](const FamilyBenchRow& row) {
        return row.family == "pipeline" && row.not_measured.empty();
      });
      if (timed || runnable_pipeline(chosen)) continue;
    } else if (candidate.family != "spatial" || std::isfinite(candidate.predicted_seconds)) {
      continue;  // A split that was made is timed with the others.
    }
    const PlanCandidate*& kept = best[candidate.family];
    if (!kept || candidate.predicted_seconds < kept->predicted_seconds) kept = &candidate;
  }
  for (const auto& [family, candidate] : best) {
    FamilyBenchRow row;
    row.family = family;
    row.configuration = candidate->configuration;
    row.predicted_seconds = candidate->predicted_seconds;
    row.costs = candidate->costs;
    row.not_measured = candidate->rejected.empty()
                           ? fmt::format(
                                 "`cleave bench` runs whole-graph plans; run {} plans "
                                 "with `cleave {}`",
                                 family, family == "spatial" ? "split" : "stream --stages")
                           : candidate->rejected;
    rows.push_back(std::move(row));
  }
}

// The sequential plan runs on the sequential executor: the profile behind its prediction timed
// whole runs of that executor (time_whole_runs), and `cleave run --threads N` runs it. On the
// thread executor it ran in the plan's order (upward rank), not the topological order the
// profile timed. Every other plan runs on the thread executor. On a machine file's devices the
// sequential plan is every task on device 0, at its threads.
std::unique_ptr<ExecutorInterface> executor_for(const PreparedRun& prepared,
                                                const ModelPlan& plan) {
  if (plan.family == "sequential") {
    ExecutorOptions options;
    options.threads = plan.threads_per_worker;
    options.convolution_family = prepared.layouts.family;
    return std::make_unique<Executor>(prepared.graph, options);
  }
  ParallelOptions parallel;
  parallel.threads = static_cast<int>(plan.tasks.machine.size());
  parallel.threads_per_worker = plan.threads_per_worker;
  parallel.convolution_family = prepared.layouts.family;
  return std::make_unique<ParallelExecutor>(prepared.graph, plan.tasks, plan.plan, parallel);
}

// `run --plan auto` then offers its pipelined stages against the plan its check kept
// (pipeline_if_faster, timed as it times them): whether it runs them, the check's line in
// bench.pipeline_check.
bool offer_pipeline(PreparedRun& prepared, const RunRecipe& recipe, const ModelPlan& chosen,
                    const ModelPlan& auto_plan, const std::function<SampleInputs(int)>& input_of,
                    FamilyBench& bench) {
  const PlanCandidate* stages = runnable_pipeline(chosen);
  if (!stages) return false;
  RunRecipe checking = recipe;
  checking.auto_check = true;
  checking.log = [&bench](const std::string& line) {
    const std::string prefix = "recipe: ";
    bench.pipeline_check = line.starts_with(prefix) ? line.substr(prefix.size()) : line;
  };
  ModelPlan kept = auto_plan;
  const std::unique_ptr<ExecutorInterface> kept_executor = executor_for(prepared, auto_plan);
  const bool runs =
      pipeline_if_faster(prepared, checking, kept, *kept_executor, input_of, *stages) != nullptr;
  if (bench.pipeline_check.empty()) bench.pipeline_check = kept.candidates.back().rejected;
  bench.pipeline_check +=
      runs ? ": runs the pipeline" : fmt::format(": kept {}", kept.configuration);
  return runs;
}

nlohmann::json family_report(const ModelBenchSettings& settings, const FamilyBench& bench,
                             ConvolutionFamily convolutions) {
  nlohmann::json families = nlohmann::json::array();
  nlohmann::json not_measured = nlohmann::json::array();
  for (const FamilyBenchRow& row : bench.rows) {
    if (!row.not_measured.empty()) {
      not_measured.push_back({{"family", row.family},
                              {"configuration", row.configuration},
                              {"predicted_seconds", row.predicted_seconds},
                              {"costs", costs_to_json(row.costs)},
                              {"reason", row.not_measured}});
      continue;
    }
    const double measured = median_of(row.ms) / 1e3;
    families.push_back({{"family", row.family},
                        {"configuration", row.configuration},
                        {"predicted_seconds", row.predicted_seconds},
                        {"costs", costs_to_json(row.costs)},
                        {"measured_seconds", measured},
                        {"lowest_seconds", *std::min_element(row.ms.begin(), row.ms.end()) / 1e3},
                        {"ratio", measured / row.predicted_seconds},
                        {"fastest", row.fastest},
                        {"chosen", row.chosen},
                        {"auto_runs", row.auto_runs}});
    if (row.family == "spatial" && bench.spatial_max_abs_difference)
      families.back()["max_abs_difference"] = *bench.spatial_max_abs_difference;
  }
  nlohmann::json report = {
      {"model", settings.model},      {"workers", settings.workers},
      {"costs", settings.costs},      {"convolutions", to_string(convolutions)},
      {"repeat", settings.repeat},    {"warmup", settings.warmup},
      {"plan_ms", bench.planning_ms}, {"families", families},
      {"not_measured", not_measured}};
  if (!settings.machine.empty()) report["machine"] = settings.machine;
  if (bench.auto_check) {
    const AutoCheck& check = *bench.auto_check;
    report["auto_check"] = {{"candidate", check.candidate_configuration},
                            {"candidate_ms", check.candidate_ms},
                            {"runner_up", check.runner_up},
                            {"runner_up_ms", check.runner_up_ms},
                            {"sequential_ms", check.sequential_ms},
                            {"kept", check.kept}};
    if (!check.third.empty()) {
      report["auto_check"]["third"] = check.third;
      report["auto_check"]["third_ms"] = check.third_ms;
    }
  }
  if (!bench.pipeline_check.empty()) report["pipeline_check"] = bench.pipeline_check;
  return report;
}

// The largest |a - b| over every sample's outputs (+inf where shapes differ).
double largest_difference(const std::vector<std::vector<Tensor>>& a,
                          const std::vector<std::vector<Tensor>>& b) {
  double worst = a.size() == b.size() ? 0 : std::numeric_limits<double>::infinity();
  for (std::size_t s = 0; s < a.size() && s < b.size(); ++s)
    worst = std::max(worst, max_abs_difference(a[s], b[s]));
  return worst;
}

// The split timed beside the others: auto's choice where predicted faster than the plan (as
// prepare_run's spatial_if_faster offers it), its outputs checked against the sequential row's.
void add_spatial_row(const SpatialCandidate& spatial, const RunRecipe& recipe,
                     PreparedRun& prepared, std::vector<std::unique_ptr<ExecutorInterface>>& owned,
                     FamilyBench& bench) {
  std::unique_ptr<ExecutorInterface> split =
      make_spatial_executor(spatial, recipe, prepared.layouts.family);
  FamilyBenchRow row{
      "spatial", spatial.row.configuration, spatial.row.predicted_seconds, {}, {}, false, false};
  row.costs = spatial.row.costs;
  try {
    const std::vector<std::vector<Tensor>> outputs = split->run(prepared.inputs);
    for (std::size_t v = 0; v < bench.rows.size(); ++v) {
      if (bench.rows[v].family != "sequential") continue;
      bench.spatial_max_abs_difference =
          largest_difference(outputs, owned[v]->run(prepared.inputs));
      break;
    }
  } catch (const Error& e) {
    // Listed after the timed rows, untimed: a fused form the split's region rules mistook.
    row.not_measured = fmt::format("the split's run failed: {}", e.what());
    bench.rows.push_back(std::move(row));
    return;
  }
  row.chosen = spatial.row.predicted_seconds < prepared.plan->plan.makespan;
  if (row.chosen)
    for (FamilyBenchRow& other : bench.rows) other.chosen = false;
  owned.push_back(std::move(split));
  bench.rows.push_back(std::move(row));
}

}  // namespace

FamilyBench run_family_bench(const ModelBenchSettings& settings, const RunTimer& timer) {
  // A bad machine file is reported before the model is loaded or profiled.
  std::optional<Machine> machine;
  if (!settings.machine.empty()) machine = read_machine(settings.machine);
  LoadOptions load;
  load.shapes = parse_input_shapes(settings.shapes);
  // Auto's prediction as it stands, the table's choice: its timed check runs apart below
  // (time_auto_check), so that both the prediction and what auto runs are timed.
  RunRecipe recipe;
  recipe.strategy = "auto";
  recipe.workers = settings.workers;
  recipe.threads_per_worker = 1;
  recipe.layouts_follow_plan_threads = false;
  recipe.costs = settings.costs;
  recipe.auto_check = false;
  recipe.samples = settings.samples;
  // Every family plans on the machine file's devices; the split is offered below, timed beside.
  recipe.machine = machine;
  recipe.offer_spatial = false;
  recipe.inputs = [](const Graph& graph, int sample) { return random_inputs(graph, sample); };
  recipe.timer = timer;
  Session session(settings.model, SessionOptions{load, recipe});
  const std::shared_ptr<PreparedShape> shape = session.prepare({});
  PreparedRun& prepared = shape->run;
  ModelPlan& chosen = *prepared.plan;
  ModelPlanOptions options;
  options.strategy = "auto";
  options.workers = settings.workers;
  options.samples = settings.samples;
  options.machine = machine;
  std::optional<SpatialCandidate> spatial;
  if (machine && machine->size() > 1) {
    const auto start = std::chrono::steady_clock::now();
    spatial = spatial_candidate(prepared.graph, *prepared.costs, *machine, settings.samples);
    chosen.planning_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    chosen.candidates.push_back(spatial->row);
  }
  add_split_and_stage_candidates(prepared.graph, *prepared.costs, options, chosen);

  FamilyBench bench;
  bench.planning_ms = chosen.planning_seconds * 1e3;
  // Before the rows' executors exist: the check's runs have only their own threads alive.
  std::optional<CheckedChoice> checked = time_auto_check(prepared, recipe);
  const ModelPlan& auto_plan = checked ? checked->kept : chosen;
  if (checked) bench.auto_check = std::move(checked->check);
  const std::function<SampleInputs(int)> input_of = [&](int sample) {
    return recipe.inputs(prepared.graph, sample);
  };
  const bool pipeline_runs = offer_pipeline(prepared, recipe, chosen, auto_plan, input_of, bench);
  std::vector<std::unique_ptr<ExecutorInterface>> owned;
  std::vector<ExecutorInterface*> executors;
  std::vector<const ModelPlan*> plans = best_of_each_family(chosen);
  if (std::none_of(plans.begin(), plans.end(),
                   [&](const ModelPlan* plan) { return same_plan(*plan, auto_plan); })) {
    plans.push_back(&auto_plan);  // e.g. sequential on every core, kept over 1 thread's row.
  }
  for (const ModelPlan* plan : plans) {
    owned.push_back(executor_for(prepared, *plan));
    executors.push_back(owned.back().get());
    bench.rows.push_back({plan->family,
                          plan->configuration,
                          plan->plan.makespan,
                          {},
                          {},
                          false,
                          plan == &chosen,
                          !pipeline_runs && same_plan(*plan, auto_plan)});
    bench.rows.back().costs = costs_of(chosen, plan->configuration);
  }
  if (const PlanCandidate* stages = runnable_pipeline(chosen)) {
    const auto [count, threads] = *parse_pipeline_configuration(stages->configuration);
    owned.push_back(make_pipeline(prepared, recipe, count, threads, input_of));
    executors.push_back(owned.back().get());
    bench.rows.push_back({stages->family,
                          stages->configuration,
                          stages->predicted_seconds,
                          {},
                          {},
                          false,
                          false,
                          pipeline_runs});
    bench.rows.back().costs = stages->costs;
  }
  if (spatial && spatial->plan) add_spatial_row(*spatial, recipe, prepared, owned, bench);
  executors.resize(owned.size());
  for (std::size_t v = 0; v < owned.size(); ++v) executors[v] = owned[v].get();
  std::vector<std::vector<double>> ms;
  time_interleaved(executors, prepared.inputs, settings.warmup, settings.repeat, ms);
  std::size_t fastest = 0;
  for (std::size_t v = 0; v < executors.size(); ++v) {
    bench.rows[v].ms = std::move(ms[v]);
    if (median_of(bench.rows[v].ms) < median_of(bench.rows[fastest].ms)) fastest = v;
  }
  if (!bench.rows.empty()) bench.rows[fastest].fastest = true;
  add_unrunnable_rows(chosen, bench.rows);
  bench.report = family_report(settings, bench, prepared.layouts.family);
  // Whether the profile behind the predictions was measured now, reused or made again.
  if (chosen.plan.notes.contains("profile_cache"))
    bench.report["profile_cache"] = chosen.plan.notes["profile_cache"];
  if (chosen.plan.notes.contains("profile_level"))
    bench.report["profile_level"] = chosen.plan.notes["profile_level"];
  return bench;
}

std::string family_bench_text(const ModelBenchSettings& settings, const FamilyBench& bench) {
  std::string text = fmt::format(
      "model        {} on {} core(s), {} sample(s) per run, {} costs, planned in "
      "{:.2f} ms\n\n",
      settings.model, settings.workers, settings.samples, settings.costs, bench.planning_ms);
  text += fmt::format("{:<14} {:<44} {:>12} {:>12} {:>12} {:>9}\n", "family", "configuration",
                      "predicted ms", "median ms", "lowest ms", "meas/pred");
  for (const FamilyBenchRow& row : bench.rows) {
    if (!row.not_measured.empty()) continue;
    const double median = median_of(row.ms);
    text += fmt::format(
        "{:<14} {:<44} {:>12.3f} {:>12.3f} {:>12.3f} {:>9.2f}{}\n", row.family, row.configuration,
        row.predicted_seconds * 1e3, median, *std::min_element(row.ms.begin(), row.ms.end()),
        median / (row.predicted_seconds * 1e3),
        std::string(row.fastest ? "  fastest" : "") + (row.chosen ? "  auto's choice" : "") +
            (row.auto_runs ? "  auto runs" : ""));
  }
  for (const FamilyBenchRow& row : bench.rows) {
    if (row.not_measured.empty()) continue;
    text += fmt::format("{:<14} {:<44} {:>12.3f}  not measured: {}\n", row.family,
                        row.configuration, row.predicted_seconds * 1e3, row.not_measured);
  }
  if (const std::optional<AutoCheck>& check = bench.auto_check) {
    text +=
        fmt::format("\nauto's timed check (as `run --plan auto`): {}\n", auto_check_text(*check));
  }
  if (!bench.pipeline_check.empty())
    text += fmt::format("auto's pipeline check (as `run --plan auto`): {}\n", bench.pipeline_check);
  return text;
}

}  // namespace cleave
