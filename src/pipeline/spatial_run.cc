// The spatial family in process: the split searched, planned one worker per machine, timed
// against auto's choice, and run on the thread executor.
#include "pipeline/spatial_run.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "frontend/auto_search.h"
#include "frontend/candidate_costs.h"
#include "frontend/costs.h"
#include "runtime/wait_policy.h"
#include "spatial/split_bench.h"
#include "spatial/split_choice.h"
#include "spatial/split_machine.h"
#include "spatial/split_plan.h"
#include "support/error.h"

namespace cleave {

namespace {

// Splitting a model builds one sub-graph per machine (seconds each for a corpus model): the
// split is searched along H only, and beyond this many devices on the first ones only (the
// configuration says so), so that planning stays seconds, not minutes.
constexpr int kSplitMachinesSearched = 8;

Machine first_devices(const Machine& machine, int devices) {
  Machine searched = machine;
  searched.devices.resize(devices);
  searched.bandwidth.resize(devices);
  searched.latency.resize(devices);
  for (auto& row_of : searched.bandwidth) row_of.resize(devices);
  for (auto& row_of : searched.latency) row_of.resize(devices);
  return searched;
}

// The chosen split's own cost table. With profiled costs, its nodes are profiled as the
// model's were (same profiler, kernels and cache, keyed by the partitioned graph's
// fingerprint): a piece's convolution at its own shape (halo rows; oneDNN may pick another
// kernel for it) and the copies as they run, neither of which a share of the whole node's time
// or a bandwidth model sees. Other sources: the whole node's share, copies by bytes.
CostTable piece_costs(const Graph& graph, const SplitResult& best, const SplitModelOptions& options,
                      const CostTable& costs, const Machine& machine, std::string& how) {
  if (costs.source == "profile") {
    CostChoice choice;
    choice.source = "profile";
    choice.max_threads = profile_threads_for(machine);
    choice.family = costs.convolution_family;
    try {
      CostTable table = choose_costs(best.partitioned.graph, choice);
      price_pieces_as_their_ranks_run_them(best.partitioned, table);
      how = "pieces profiled";
      return table;
    } catch (const Error& e) {
      how = fmt::format("pieces priced by share (their profile failed: {})", e.what());
    }
  } else {
    how = "pieces priced by share";
  }
  return split_cost_table(graph, best.partitioned, options.cost, &costs);
}

void log_line(const RunRecipe& recipe, const std::string& line) {
  if (recipe.log) recipe.log(line);
}

// The region rules know the standard ops and the optimizer's fused forms; one they mistook would
// give other outputs, or fail: one run of the split beside what auto kept, before it may
// replace it. Empty when they agree, else why not.
std::string outputs_disagree(ExecutorInterface& split, const KeptRun& kept,
                             const std::vector<SampleInputs>& inputs) {
  try {
    const std::vector<std::vector<Tensor>> got = split.run(inputs);
    return split_outputs_differ(got, kept.executor->run(inputs), kept.configuration);
  } catch (const Error& e) {
    return fmt::format("its run failed: {}", e.what());
  }
}

}  // namespace

std::string split_outputs_differ(const std::vector<std::vector<Tensor>>& got,
                                 const std::vector<std::vector<Tensor>>& want,
                                 const std::string& want_name) {
  // Float sums in another order differ in the last bits (about 1e-6 of the values); a region
  // computed from the wrong rows differs by the values themselves.
  constexpr double kOutputTolerance = 1e-3;
  double worst = 0, scale = 1;
  for (std::size_t s = 0; s < want.size(); ++s) {
    worst = std::max(worst, s < got.size() ? max_abs_difference(got[s], want[s])
                                           : std::numeric_limits<double>::infinity());
    for (const Tensor& output : want[s])
      for (double value : output.to_double_vector()) scale = std::max(scale, std::abs(value));
  }
  if (worst <= kOutputTolerance * scale) return "";
  return fmt::format("its outputs differ from {}'s by up to {:.3g}", want_name, worst);
}

void price_split_copies(const CostTable& costs, SplitCostModel& cost) {
  if (costs.source != "profile" && costs.source != "analytical") return;
  const PeakRates rates = measure_peak_rates(1);
  cost.copy_bytes_per_second = rates.bytes_per_second;
  cost.seconds_per_copy = rates.seconds_per_op;
}

SplitPrediction predict_split(const Graph& graph, const SplitResult& best,
                              const SplitModelOptions& options, const CostTable& costs,
                              const Machine& machine, int samples) {
  SplitPrediction out;
  out.costs = piece_costs(graph, best, options, costs, machine, out.how);
  // A machine file's devices are ranks: rank 0 hands the input out and gathers the outputs.
  out.plan = split_plan(best.partitioned.graph, best.partitioned, out.costs, machine, samples,
                        ModelValues::kFromRank0);
  out.plan.plan.notes["piece_costs"] = out.how;
  return out;
}

SpatialCandidate spatial_candidate(const Graph& graph, const CostTable& costs,
                                   const Machine& machine, int samples) {
  SpatialCandidate out;
  PlanCandidate& row = out.row;
  row.strategy = "split";
  row.family = "spatial";
  row.predicted_seconds = std::numeric_limits<double>::infinity();
  const int machines = std::min(static_cast<int>(machine.size()), kSplitMachinesSearched);
  const Machine searched = first_devices(machine, machines);
  const bool all = machines == static_cast<int>(machine.size());
  row.configuration = all ? fmt::format("split over {} devices", machines)
                          : fmt::format("split over {} of {} devices", machines, machine.size());
  if (!all) row.cut_short = fmt::format("{} of {} devices searched", machines, machine.size());
  try {
    SplitModelOptions options;
    options.split.machines = machines;
    // The naive phase and the manifest are figures and files of `cleave split`; a run needs
    // the partitioned graph only.
    options.figures_only = true;
    use_split_machine(searched, "--machine", machines, options);
    price_split_copies(costs, options.cost);
    SplitChoice choice = choose_split(graph, options, {SplitDim::kH}, true,
                                      SearchObjective::kSeconds, &costs, &searched);
    row.searched = choice.splits_built;
    if (!choice.best) {
      row.rejected = fmt::format("over memory along every dim ({})", choice.over_memory.front());
      return out;
    }
    const SplitResult& best = *choice.best;
    const SplitStats& split = best.report.optimized;
    row.configuration += fmt::format(" along {}", split_dim_name(options.split.dim));
    SplitPrediction predicted = predict_split(graph, best, options, costs, searched, samples);
    out.plan = std::move(predicted.plan);
    // The one simulator, as every other row: the split's plan on its machines and links.
    row.predicted_seconds = out.plan->plan.makespan;
    row.costs = describe_costs(predicted.costs, *out.plan, true);
    row.costs.source += fmt::format(" ({})", predicted.how);
    if (samples > 1) row.samples_per_second = samples / row.predicted_seconds;
    for (int64_t bytes : split.weight_bytes) row.memory_bytes.push_back(static_cast<double>(bytes));
    for (int64_t bytes : split.peak_activation_bytes)
      row.activation_bytes.push_back(static_cast<double>(bytes));
    out.plan->family = row.family;
    out.plan->configuration = row.configuration;
    out.split = std::make_shared<const PartitionedGraph>(std::move(choice.best->partitioned));
    out.options = options;
    out.options.split = choice.best_split;
    out.options.costs = nullptr;
  } catch (const Error& e) {
    row.rejected = fmt::format("no split: {}", e.what());
    out.plan.reset();
  }
  return out;
}

std::unique_ptr<ParallelExecutor> make_spatial_executor(const SpatialCandidate& candidate,
                                                        const RunRecipe& recipe,
                                                        ConvolutionFamily family) {
  if (!candidate.split || !candidate.plan)
    throw Error(fmt::format("spatial: no split to run ({})", candidate.row.rejected));
  const ModelPlan& plan = *candidate.plan;
  const int workers = static_cast<int>(plan.tasks.machine.size());
  const PlanThreads fit =
      recipe.host_load ? plan_threads_for(workers, plan.threads_per_worker, *recipe.host_load)
                       : PlanThreads{workers, plan.threads_per_worker};
  ParallelOptions options;
  options.threads = fit.threads;
  options.threads_per_worker = fit.threads_per_worker;
  options.blocked_layouts = !recipe.plain_layouts;
  options.convolution_family = family;
  options.release_packed_weights = recipe.release_packed_weights;
  return std::make_unique<ParallelExecutor>(candidate.split->graph, plan.tasks, plan.plan, options);
}

std::optional<SpatialRun> spatial_if_faster(PreparedRun& prepared, const RunRecipe& recipe,
                                            ModelPlan& table, const KeptRun& kept,
                                            const std::function<SampleInputs(int sample)>& input_of,
                                            std::optional<SpatialCandidate> offered) {
  if (!offered) {
    if (!recipe.machine || recipe.machine->size() < 2 || !prepared.costs) return std::nullopt;
    offered = spatial_candidate(prepared.graph, *prepared.costs, *recipe.machine, recipe.samples);
  }
  PlanCandidate& row = table.candidates.emplace_back(offered->row);
  if (!row.rejected.empty()) return std::nullopt;
  if (!(row.predicted_seconds < kept.predicted_seconds)) {
    row.rejected = fmt::format("not faster than {} ({:.3f} ms)", kept.configuration,
                               kept.predicted_seconds * 1e3);
    return std::nullopt;
  }
  SpatialRun run{*offered->plan, make_spatial_executor(*offered, recipe, prepared.layouts.family)};
  for (int s = static_cast<int>(prepared.inputs.size()); s < run.executor->samples(); ++s)
    prepared.inputs.push_back(input_of(s));
  if (kept.executor) {
    if (std::string fault = outputs_disagree(*run.executor, kept, prepared.inputs);
        !fault.empty()) {
      row.rejected = "the split is not run: " + fault;
      log_line(recipe, "recipe: " + row.rejected);
      return std::nullopt;
    }
  }
  std::string kept_reason =
      fmt::format("not faster than {} ({:.3f} ms)", row.configuration, row.predicted_seconds * 1e3);
  if (recipe.auto_check && kept.executor) {
    const std::vector<double> ms = time_alike(
        recipe, {{row.configuration, run.executor.get()}, {kept.configuration, kept.executor}},
        prepared.inputs);
    log_line(recipe, fmt::format("recipe: timed spatial {} at {:.3f} ms against {} at {:.3f} ms",
                                 row.configuration, ms[0], kept.configuration, ms[1]));
    // On a tie the split, predicted faster.
    if (ms[0] > ms[1]) {
      row.rejected = fmt::format("slower when timed than {}: {:.3f} ms vs {:.3f} ms",
                                 kept.configuration, ms[0], ms[1]);
      return std::nullopt;
    }
    kept_reason = fmt::format("slower when timed than {}: {:.3f} ms vs {:.3f} ms",
                              row.configuration, ms[1], ms[0]);
    if (prepared.auto_check) prepared.auto_check->kept = row.configuration;
  }
  if (kept.row >= 0) table.candidates[kept.row].rejected = kept_reason;
  return run;
}

void run_spatial_instead(PreparedRun& prepared, const RunRecipe& recipe, SpatialRun run) {
  ModelPlan& plan = run.plan;
  if (prepared.plan) {
    plan.candidates = std::move(prepared.plan->candidates);
    plan.planning_seconds = prepared.plan->planning_seconds;
  }
  plan.plan.notes["auto_choice"] = plan.configuration;
  mark_candidates(plan.candidates, plan.configuration);
  log_line(recipe, fmt::format("recipe: auto runs the spatial split, {} ({} worker(s) x {} "
                               "thread(s) on {} thread(s))",
                               plan.configuration, plan.tasks.machine.size(),
                               run.executor->threads_per_worker(), run.executor->threads()));
  prepared.plan = std::move(plan);
  prepared.sequential = nullptr;
  prepared.pipeline = nullptr;
  prepared.parallel = run.executor.get();
  prepared.executor = std::move(run.executor);
}

}  // namespace cleave
