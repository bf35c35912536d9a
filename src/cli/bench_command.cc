// `cleave bench`: sequential vs planned parallel latency, interleaved in one run, with Ramiel's
// tables.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/static_cost.h"
#include "cli/commands.h"
#include "cli/option_limits.h"
#include "cost/cost_table.h"
#include "pipeline/layout_choice.h"
#include "pipeline/load.h"
#include "pipeline/model_plan.h"
#include "pipeline/plan_and_run.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "spatial/split_bench.h"
#include "support/timing.h"

namespace cleave::cli {

namespace {

struct BenchSettings {
  std::string model;
  std::vector<std::string> shapes;
  int workers = 2;
  int warmup = 3;
  int repeat = 20;
  std::string costs = "profile";
  std::string strategy = "auto";
  std::string split;  // a `cleave split` folder of the model, timed beside the others
  bool json = false;
};

ExecutorOptions with_threads(int threads, ConvolutionFamily family) {
  ExecutorOptions options;
  options.threads = threads;
  options.convolution_family = family;
  return options;
}

bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape() || a[i].dtype() != b[i].dtype() ||
        a[i].byte_size() != b[i].byte_size())
      return false;
    if (std::memcmp(a[i].raw(), b[i].raw(), a[i].byte_size()) != 0) return false;
  }
  return true;
}

int run_bench(const BenchSettings& settings) {
  LoadOptions load;
  load.shapes = parse_input_shapes(settings.shapes);
  // Every variant runs the kernels a 1-thread-per-worker plan runs, so that they compare
  // schedules, not kernels, and the bitwise check below is meaningful.
  RunRecipe recipe;
  recipe.strategy = settings.strategy;
  recipe.workers = settings.workers;
  recipe.threads_per_worker = 1;
  recipe.layouts_follow_plan_threads = false;
  recipe.costs = settings.costs;
  recipe.inputs = [](const Graph& graph, int) { return random_inputs(graph, 0); };
  PreparedRun prepared = plan_and_run(settings.model, load, recipe);
  const Graph& graph = prepared.graph;
  StaticCostReport shape = analyze_static_cost(graph);
  const ConvolutionFamily family = prepared.layouts.family;
  const CostTable& costs = *prepared.costs;
  const ModelPlan& chosen = *prepared.plan;
  ParallelExecutor& parallel = *prepared.parallel;
  ModelPlanOptions options;
  options.workers = settings.workers;
  options.strategy = "lc";
  ModelPlan lc = plan_model(graph, costs, options);

  const std::map<std::string, Tensor>& inputs = prepared.inputs.front();
  Executor one_thread(graph, with_threads(1, family));
  Executor all_threads(graph, with_threads(settings.workers, family));
  ParallelOptions parallel_options;
  parallel_options.convolution_family = family;

  struct Variant {
    std::string name;
    ExecutorInterface* executor;
    std::vector<double> ms;
  };
  std::vector<Variant> variants = {
      {"sequential, 1 thread", &one_thread, {}},
      {fmt::format("sequential, {} threads intra-op", settings.workers), &all_threads, {}},
      {fmt::format("plan {} ({} x {})", chosen.plan.strategy, chosen.tasks.machine.size(),
                   chosen.threads_per_worker),
       &parallel,
       {}},
  };
  std::optional<BenchedSplit> split;
  std::unique_ptr<ParallelExecutor> split_executor;
  if (!settings.split.empty()) {
    split = load_benched_split(settings.split, settings.model, settings.shapes);
    ParallelOptions split_options;
    split_options.threads_per_worker = split->plan.threads_per_worker;
    split_options.convolution_family = family;
    split_executor = std::make_unique<ParallelExecutor>(split->graph, split->plan.tasks,
                                                        split->plan.plan, split_options);
    variants.push_back(
        {fmt::format("split, {} machines as workers", split->machines), split_executor.get(), {}});
  }
  for (int i = 0; i < settings.warmup; ++i) {
    for (auto& variant : variants) variant.executor->run(inputs);
  }
  // Interleaved so that the machine's drift affects every variant alike.
  for (int i = 0; i < settings.repeat; ++i) {
    for (auto& variant : variants) {
      auto start = std::chrono::steady_clock::now();
      variant.executor->run(inputs);
      variant.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  Executor reference(graph, with_threads(chosen.threads_per_worker, family));
  bool equal = bitwise_equal(reference.run(inputs), parallel.run(inputs));
  std::vector<std::string> checked{chosen.plan.strategy};
  // A one-worker plan hands no value between workers, so its check proves little; the lc plan,
  // when it uses several workers, is run and checked too.
  const auto busy_workers = [](const Plan& plan) {
    return std::count_if(plan.order.begin(), plan.order.end(),
                         [](const std::vector<int>& order) { return !order.empty(); });
  };
  if (busy_workers(chosen.plan) == 1 && busy_workers(lc.plan) > 1) {
    ParallelOptions lc_options = parallel_options;
    lc_options.threads_per_worker = lc.threads_per_worker;
    ParallelExecutor lc_parallel(graph, lc.tasks, lc.plan, lc_options);
    Executor lc_reference(graph, with_threads(lc.threads_per_worker, family));
    equal = bitwise_equal(lc_reference.run(inputs), lc_parallel.run(inputs)) && equal;
    checked.push_back(fmt::format("lc on {} workers", busy_workers(lc.plan)));
  }

  // A split recomputes halos and sums in another order: equal within float tolerance, not bits.
  double split_error = 0, split_scale = 0;
  if (split_executor) {
    const std::vector<Tensor> whole = one_thread.run(inputs);
    split_error = max_abs_difference(whole, split_executor->run(inputs));
    for (const Tensor& t : whole)
      for (double v : t.to_double_vector()) split_scale = std::max(split_scale, std::abs(v));
    equal = equal && split_error <= 1e-3 * (1 + split_scale);
  }

  double sequential_ms = median_of(variants[0].ms);
  double intra_ms = median_of(variants[1].ms);
  double parallel_ms = median_of(variants[2].ms);
  nlohmann::json report = {
      {"model", settings.model},
      {"nodes", graph.node_count()},
      {"weighted_cost", shape.total_weight},
      {"critical_path", shape.critical_path_length},
      {"parallelism", shape.parallelism},
      {"clusters_before_merge", lc.plan.notes.value("clusters_before_merge", 0)},
      {"clusters_after_merge", lc.plan.notes.value("clusters_after_merge", 0)},
      {"workers", settings.workers},
      {"convolutions", to_string(family)},
      {"strategy", chosen.plan.strategy},
      {"plan_ms", chosen.planning_seconds * 1e3},
      {"sequential_1_thread_ms", sequential_ms},
      {"sequential_intra_op_ms", intra_ms},
      {"parallel_ms", parallel_ms},
      {"predicted_ms", chosen.plan.makespan * 1e3},
      {"lc_predicted_ms", lc.plan.makespan * 1e3},
      {"speedup_vs_1_thread", sequential_ms / parallel_ms},
      {"speedup_vs_intra_op", intra_ms / parallel_ms},
      {"prediction_error", (chosen.plan.makespan * 1e3 - parallel_ms) / parallel_ms},
      {"bitwise_equal", equal},
      {"bitwise_checked", checked},
      {"repeat", settings.repeat}};
  if (split) {
    const double split_ms = median_of(variants[3].ms);
    report["split"] = {
        {"folder", settings.split},           {"machines", split->machines},
        {"nodes", split->graph.node_count()}, {"ms", split_ms},
        {"vs_intra_op", intra_ms / split_ms}, {"vs_1_thread", sequential_ms / split_ms},
        {"max_abs_error", split_error},       {"max_abs_output", split_scale}};
  }
  if (settings.json) {
    fmt::print("{}\n", report.dump(2));
    return equal ? 0 : 1;
  }
  fmt::print(
      "model        {} — {} nodes, weighted cost {}, critical path {}, parallelism {:.2f}x\n",
      settings.model, graph.node_count(), shape.total_weight, shape.critical_path_length,
      shape.parallelism);
  fmt::print("clusters     {} linear, {} after merging\n",
             report["clusters_before_merge"].get<int>(), report["clusters_after_merge"].get<int>());
  fmt::print("convolutions {} (measured at 1 thread; every variant runs it)\n", to_string(family));
  fmt::print("\n{:<40} {:>12} {:>10}\n", "variant (median of interleaved runs)", "ms", "speedup");
  for (const auto& variant : variants) {
    double ms = median_of(variant.ms);
    fmt::print("{:<40} {:>12.3f} {:>9.2f}x\n", variant.name, ms, sequential_ms / ms);
  }
  fmt::print("\npredicted    {:.3f} ms for the plan ({:+.1f}% vs measured), planned in {:.2f} ms\n",
             chosen.plan.makespan * 1e3, 100 * report["prediction_error"].get<double>(),
             chosen.planning_seconds * 1e3);
  if (split)
    fmt::print(
        "split        {} nodes on {} workers; max |split - whole| = {:.3g} (max |whole| "
        "{:.3g})\n",
        split->graph.node_count(), split->machines, split_error, split_scale);
  fmt::print("outputs      {} ({})\n",
             equal ? "bitwise equal to the sequential run" : "DIFFER from the sequential run",
             fmt::join(checked, ", "));
  return equal ? 0 : 1;
}

}  // namespace

void register_bench(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<BenchSettings>();
  CLI::App* command = app.add_subcommand(
      "bench", "Time sequential and planned parallel runs of a model side by side");
  command->add_option("model", settings->model, "ONNX model file")->required();
  command->add_option("--shape", settings->shapes,
                      "name=d0,d1,... fixes an input's symbolic dims (repeatable)");
  command->add_option("--workers", settings->workers, "Cores to use")
      ->default_val(2)
      ->check(integer_in(1, kMaxWorkers));
  command->add_option("--warmup", settings->warmup, "Untimed rounds first")
      ->default_val(3)
      ->check(integer_in(0, kMaxRounds));
  command->add_option("--repeat", settings->repeat, "Timed rounds")
      ->default_val(20)
      ->check(integer_in(1, kMaxRounds));
  command->add_option("--costs", settings->costs, "profile, static or analytical")
      ->check(CLI::IsMember({"profile", "static", "analytical"}))
      ->default_val("profile");
  command
      ->add_option("--strategy", settings->strategy,
                   "Planner of the parallel variant: as `cleave plan --strategy`")
      ->check(CLI::IsMember(model_strategies()))
      ->default_val("auto");
  command->add_option("--split", settings->split,
                      "Also time a `cleave split` folder of the model (its partitioned graph "
                      "and plan.json, one worker per machine), checked against the whole model");
  command->add_flag("--json", settings->json, "Print the report as JSON");
  command->callback([settings, &action] { action = [settings] { return run_bench(*settings); }; });
}

}  // namespace cleave::cli
