// `cleave bench`'s driver: the interleaved timed runs, the output checks and Ramiel's tables.
#include "pipeline/model_bench.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "cost/cost_table.h"
#include "frontend/layout_choice.h"
#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "pipeline/pipeline_run.h"
#include "pipeline/plan_and_run.h"
#include "pipeline/run_report.h"
#include "pipeline/session.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "runtime/timed_rounds.h"
#include "spatial/split_bench.h"
#include "support/timing.h"

namespace cleave {

namespace {

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

// The JSON report; `variants` are sequential, intra-op, plan, then the split when there is one.
nlohmann::json bench_report(const ModelBenchSettings& settings, const ModelBench& bench,
                            const ModelPlan& chosen, const ModelPlan& lc, int workers) {
  double sequential_ms = median_of(bench.variants[0].ms);
  double intra_ms = median_of(bench.variants[1].ms);
  double parallel_ms = median_of(bench.variants[2].ms);
  // The planned variant's runs as every run reports them; bench's statistics beside them.
  RunSummary summary;
  summary.model = settings.model;
  summary.latencies_ms = bench.variants[2].ms;
  summary.layouts_family = to_string(bench.family);
  summary.plan = RunPlanSummary{chosen.plan.strategy, workers, chosen.threads_per_worker,
                                settings.samples, chosen.plan.makespan * 1e3};
  nlohmann::json report = run_report_json(summary);
  report.update({{"nodes", bench.nodes},
                 {"weighted_cost", bench.shape.total_weight},
                 {"critical_path", bench.shape.critical_path_length},
                 {"parallelism", bench.shape.parallelism},
                 {"clusters_before_merge", lc.plan.notes.value("clusters_before_merge", 0)},
                 {"clusters_after_merge", lc.plan.notes.value("clusters_after_merge", 0)},
                 {"workers", settings.workers},
                 {"convolutions", to_string(bench.family)},
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
                 {"bitwise_equal", bench.equal},
                 {"bitwise_checked", bench.checked},
                 {"repeat", settings.repeat}});
  if (bench.has_split) {
    const double split_ms = median_of(bench.variants[3].ms);
    report["split"] = {
        {"folder", settings.split},           {"machines", bench.split_machines},
        {"nodes", bench.split_nodes},         {"ms", split_ms},
        {"vs_intra_op", intra_ms / split_ms}, {"vs_1_thread", sequential_ms / split_ms},
        {"max_abs_error", bench.split_error}, {"max_abs_output", bench.split_scale}};
  }
  return report;
}

}  // namespace

void time_interleaved(const std::vector<ExecutorInterface*>& executors,
                      const std::vector<SampleInputs>& inputs, int warmup, int repeat,
                      std::vector<std::vector<double>>& ms) {
  ms = time_in_rounds(executors, TimedRounds{warmup, repeat, 1}, [&](std::size_t v) {
    auto start = std::chrono::steady_clock::now();
    executors[v]->run(inputs);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  });
}

ModelBench run_model_bench(const ModelBenchSettings& settings) {
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
  recipe.samples = settings.samples;
  if (settings.samples > 1 && settings.strategy != kPipelineStrategy) {
    throw Error(fmt::format("--samples {}: takes effect with --families or --strategy pipeline",
                            settings.samples));
  }
  // A pipeline streams distinct samples; every other variant runs one sample.
  recipe.inputs = [&settings](const Graph& graph, int sample) {
    return random_inputs(graph, settings.strategy == kPipelineStrategy ? sample : 0);
  };
  SessionOptions session_options{load, recipe};
  Session session(settings.model, std::move(session_options));
  const std::shared_ptr<PreparedShape> shape = session.prepare({});
  PreparedRun& prepared = shape->run;
  const Graph& graph = prepared.graph;
  ModelBench bench;
  bench.nodes = graph.node_count();
  bench.shape = analyze_static_cost(graph);
  const ConvolutionFamily family = bench.family = prepared.layouts.family;
  const CostTable& costs = *prepared.costs;
  // A pipeline has no task plan: its prediction and name stand in for one in the report.
  ModelPlan pipeline_plan;
  if (prepared.pipeline) {
    pipeline_plan.plan.strategy = kPipelineStrategy;
    pipeline_plan.plan.makespan = pipeline_seconds(prepared.pipeline->staged(), settings.samples);
  }
  const ModelPlan& chosen = prepared.plan ? *prepared.plan : pipeline_plan;
  bench.predicted_ms = chosen.plan.makespan * 1e3;
  bench.planning_ms = chosen.planning_seconds * 1e3;
  ExecutorInterface& planned = *prepared.executor;
  ModelPlanOptions options;
  options.workers = settings.workers;
  options.strategy = "lc";
  ModelPlan lc = plan_model(graph, costs, options);

  const std::map<std::string, Tensor>& inputs = prepared.inputs.front();
  Executor one_thread(graph, with_threads(1, family));
  Executor all_threads(graph, with_threads(settings.workers, family));
  ParallelOptions parallel_options;
  parallel_options.convolution_family = family;

  std::vector<ExecutorInterface*> executors = {&one_thread, &all_threads, &planned};
  bench.variants = {
      {"sequential, 1 thread", {}},
      {fmt::format("sequential, {} threads intra-op", settings.workers), {}},
      {prepared.pipeline
           ? pipeline_configuration(prepared.pipeline->stages(), chosen.threads_per_worker)
           : fmt::format("plan {} ({} x {})", chosen.plan.strategy, chosen.tasks.machine.size(),
                         chosen.threads_per_worker),
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
    executors.push_back(split_executor.get());
    bench.variants.push_back({fmt::format("split, {} machines as workers", split->machines), {}});
    bench.has_split = true;
    bench.split_nodes = split->graph.node_count();
    bench.split_machines = split->machines;
  }
  std::vector<std::vector<double>> ms(executors.size());
  const std::vector<SampleInputs> run_inputs =
      prepared.pipeline ? prepared.inputs : std::vector<SampleInputs>{inputs};
  time_interleaved(executors, run_inputs, settings.warmup, settings.repeat, ms);
  for (std::size_t v = 0; v < executors.size(); ++v) bench.variants[v].ms = std::move(ms[v]);
  Executor reference(graph, with_threads(chosen.threads_per_worker, family));
  bool equal = true;
  const std::vector<std::vector<Tensor>> want = reference.run(run_inputs);
  const std::vector<std::vector<Tensor>> got = planned.run(run_inputs);
  for (std::size_t s = 0; s < want.size(); ++s) equal = equal && bitwise_equal(want[s], got[s]);
  bench.checked = {chosen.plan.strategy};
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
    bench.checked.push_back(fmt::format("lc on {} workers", busy_workers(lc.plan)));
  }

  // A split recomputes halos and sums in another order: equal within float tolerance, not bits.
  if (split_executor) {
    const std::vector<Tensor> whole = one_thread.run(inputs);
    bench.split_error = max_abs_difference(whole, split_executor->run(inputs));
    for (const Tensor& t : whole)
      for (double v : t.to_double_vector())
        bench.split_scale = std::max(bench.split_scale, std::abs(v));
    equal = equal && bench.split_error <= 1e-3 * (1 + bench.split_scale);
  }
  bench.equal = equal;
  const int workers = prepared.pipeline ? prepared.pipeline->workers()
                                        : std::max<int>(1, chosen.tasks.machine.size());
  bench.report = bench_report(settings, bench, chosen, lc, workers);
  return bench;
}

std::string model_bench_text(const ModelBenchSettings& /*settings*/, const ModelBench& bench) {
  const double sequential_ms = median_of(bench.variants[0].ms);
  const nlohmann::json& plan = bench.report["plan"];
  RunReportText text;
  text.threads = bench.variants[2].name;
  text.plan_where =
      fmt::format("on {} worker(s) x {} thread(s), {} sample(s)", plan["workers"].get<int>(),
                  plan["threads_per_worker"].get<int>(), plan["samples"].get<int>());
  text.plan_tail =
      fmt::format(" ({:+.1f}% vs measured), planned in {:.2f} ms",
                  100 * bench.report["prediction_error"].get<double>(), bench.planning_ms);
  std::string lines = fmt::format(
      "graph      {} nodes, weighted cost {}, critical path {}, parallelism {:.2f}x\n", bench.nodes,
      bench.shape.total_weight, bench.shape.critical_path_length, bench.shape.parallelism);
  lines += fmt::format("clusters   {} linear, {} after merging\n",
                       bench.report["clusters_before_merge"].get<int>(),
                       bench.report["clusters_after_merge"].get<int>());
  lines += fmt::format("layouts    {} (measured at 1 thread; every variant runs it)\n",
                       to_string(bench.family));
  lines += fmt::format("\n{:<40} {:>12} {:>10}\n", "variant (median of interleaved runs)", "ms",
                       "speedup");
  for (const BenchVariantTimes& variant : bench.variants) {
    double ms = median_of(variant.ms);
    lines += fmt::format("{:<40} {:>12.3f} {:>9.2f}x\n", variant.name, ms, sequential_ms / ms);
  }
  lines += "\n";
  if (bench.has_split)
    lines += fmt::format(
        "split      {} nodes on {} workers; max |split - whole| = {:.3g} (max |whole| "
        "{:.3g})\n",
        bench.split_nodes, bench.split_machines, bench.split_error, bench.split_scale);
  lines += fmt::format("check      {} ({})\n",
                       bench.equal ? "bitwise equal to the sequential run"
                                   : "outputs DIFFER from the sequential run",
                       fmt::join(bench.checked, ", "));
  text.after_outputs.push_back(lines);
  return run_report_text(bench.report, text);
}

}  // namespace cleave
