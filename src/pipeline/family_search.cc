// The spatial and pipelined rows of `auto`'s candidate table (family_search.h).
#include "pipeline/family_search.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "frontend/candidate_costs.h"
#include "frontend/costs.h"
#include "frontend/stage_plan.h"
#include "pipeline/pipeline_run.h"
#include "pipeline/spatial_run.h"
#include "plan/plan_memory.h"
#include "stream/stages.h"
#include "support/error.h"

namespace cleave {

namespace {

// Stages beyond this many cut a model into slivers whose hand-offs dominate.
constexpr int kMostStages = 16;

// The spatial row of `cleave plan`: predicted faster than the plan, it is still not the plan
// file's (a split runs as a partitioned graph of its own), so it says what runs it.
PlanCandidate spatial_row(const Graph& graph, const CostTable& costs, const Machine& machine,
                          const ModelPlan& plan, int samples) {
  PlanCandidate row = spatial_candidate(graph, costs, machine, samples).row;
  if (!row.rejected.empty()) return row;
  row.rejected = row.predicted_seconds < plan.plan.makespan
                     ? "a split is not a plan file: `cleave run --plan auto --machine FILE` "
                       "runs it where it is faster"
                     : fmt::format("not faster than {} ({:.3f} ms)", plan.configuration,
                                   plan.plan.makespan * 1e3);
  return row;
}

// Weights plus peak activations per device, short: one figure when every device holds the
// same, else the most any device holds and how many hold any.
std::string memory_text(const PlanCandidate& row) {
  std::vector<double> bytes = row.memory_bytes;
  for (std::size_t d = 0; d < bytes.size() && d < row.activation_bytes.size(); ++d)
    bytes[d] += row.activation_bytes[d];
  if (bytes.empty()) return "-";
  const auto [low, high] = std::minmax_element(bytes.begin(), bytes.end());
  const double mib = 1024.0 * 1024.0;
  if (*high - *low < 0.05 * mib) return fmt::format("{:.1f} MiB x {}", *high / mib, bytes.size());
  const auto holding = std::count_if(bytes.begin(), bytes.end(), [](double b) { return b > 0; });
  return fmt::format("<= {:.1f} MiB, {} of {}", *high / mib, holding, bytes.size());
}

// The stage of every node (by NodeId) of a cut of `graph` (graph_to_stages: contiguous runs
// of stage_nodes nodes of the topological order).
std::vector<int> stage_of_nodes(const Graph& graph, const StagedStream& staged) {
  std::vector<int> stage_of_node(graph.node_capacity(), 0);
  const std::vector<NodeId> order = graph.topological_order();
  std::size_t position = 0;
  for (std::size_t stage = 0; stage < staged.stage_nodes.size(); ++stage) {
    for (int64_t n = 0; n < staged.stage_nodes[stage] && position < order.size(); ++n)
      stage_of_node[order[position++]] = static_cast<int>(stage);
  }
  return stage_of_node;
}

// Per stage worker, the weights of its nodes and the most activations it holds at once
// (pipeline_activation_bytes: its samples in flight), stage k on worker k of `machine`.
void stage_memory(const Graph& graph, const CostTable& costs, const ModelPlanOptions& options,
                  const std::vector<int>& stage_of_node, const Machine& machine,
                  PlanCandidate& row) {
  const TaskGraph tasks = task_graph_for(graph, costs, machine);
  std::vector<int> stage_of_task;
  for (const Task& task : tasks.tasks) stage_of_task.push_back(stage_of_node[task.node]);
  row.memory_bytes = weight_bytes_per_worker(tasks, stage_of_task);
  row.activation_bytes = pipeline_activation_bytes(tasks, stage_of_task, options.samples);
}

// A machine file's row: stages as devices (MPI ranks), the fastest stage_plan as the one
// simulator predicts it, every hand-off between stages and from and to rank 0 priced.
void stages_on_devices(const Graph& graph, const CostTable& costs, const ModelPlanOptions& options,
                       PlanCandidate& row) {
  try {
    const ModelPlan plan = best_stage_plan(graph, costs, *options.machine, options.samples);
    row.predicted_seconds = plan.plan.makespan;
    row.samples_per_second = options.samples / plan.plan.makespan;
    row.configuration = plan.configuration;
    row.costs = describe_costs(costs, plan, true);
    // Measured as auto's rows are (plan_auto lists this plan itself on a machine file).
    std::vector<int> worker_of_task(plan.tasks.tasks.size(), 0);
    for (const PlannedTask& placed : plan.plan.tasks) worker_of_task[placed.task] = placed.worker;
    row.memory_bytes = weight_bytes_per_worker(plan.tasks, worker_of_task);
    row.activation_bytes = peak_activation_bytes_per_worker(plan.plan, plan.tasks);
  } catch (const Error& e) {
    row.rejected = fmt::format("no stages: {}", e.what());
  }
}

// "a", "b", ..., "z", "aa", ...: a legend key short enough for a narrow column.
std::string cost_key(std::size_t index) {
  std::string key(1, static_cast<char>('a' + index % 26));
  for (index /= 26; index > 0; index /= 26)
    key.insert(key.begin(), static_cast<char>('a' + (index - 1) % 26));
  return key;
}

}  // namespace

PlanCandidate pipeline_candidate(const Graph& graph, const CostTable& costs,
                                 const ModelPlanOptions& options) {
  PlanCandidate best;
  best.strategy = "pipeline";
  best.family = "pipeline";
  best.predicted_seconds = std::numeric_limits<double>::infinity();
  if (options.machine) {
    stages_on_devices(graph, costs, options, best);
    return best;
  }
  const int cores = options.workers * options.threads_per_worker;
  const int most = std::min({cores, kMostStages, static_cast<int>(graph.node_count())});
  std::optional<StagedStream> best_staged;
  int best_threads = 1;
  for (int stages = 2; stages <= most; ++stages) {
    const int threads = cores / stages;
    std::vector<double> node_cost(graph.node_capacity(), 0);
    // Every stage computes at once on this host's cores: each node at its busy-neighbour time.
    for (NodeId id : graph.node_ids()) node_cost[id] = costs.busy_seconds(id, threads);
    StagedStream staged = graph_to_stages(graph, stages, "model", node_cost);
    const double seconds = pipeline_seconds(staged, options.samples);
    if (seconds < best.predicted_seconds) {
      best.predicted_seconds = seconds;
      best.samples_per_second = options.samples / seconds;
      best.configuration = pipeline_configuration(stages, threads);
      best.costs = stage_costs(costs, stages, threads);
      best_staged = std::move(staged);
      best_threads = threads;
    }
  }
  // On this host's cores `cleave run --plan pipeline` runs it (and auto, where it is faster:
  // pipeline_if_faster).
  if (best_staged) {
    stage_memory(graph, costs, options, stage_of_nodes(graph, *best_staged),
                 cpu_machine(static_cast<int>(best_staged->stage_nodes.size()), best_threads,
                             costs.host_links),
                 best);
  }
  return best;
}

std::string planning_time_text(const ModelPlan& plan) {
  std::vector<std::string> cut;
  for (const PlanCandidate& row : plan.candidates) {
    if (!row.cut_short.empty()) cut.push_back(fmt::format("{} ({})", row.family, row.cut_short));
  }
  std::string out = fmt::format("{:.2f} ms", plan.planning_seconds * 1e3);
  if (!cut.empty()) out += fmt::format("; cut short by a budget: {}", fmt::join(cut, ", "));
  return out;
}

std::string candidate_table_text(const ModelPlan& plan) {
  // The costs are long and shared by many rows: a key per distinct description, a legend below.
  std::vector<std::string> legend;
  const auto key_of = [&](const PlanCandidate& row) {
    const std::string text = costs_text(row.costs);
    auto found = std::find(legend.begin(), legend.end(), text);
    if (found == legend.end()) found = legend.insert(found, text);
    return cost_key(static_cast<std::size_t>(found - legend.begin()));
  };
  std::string out = fmt::format("  {:<14} {:<38} {:>12} {:>12} {:<22} {:<5} {}\n", "family",
                                "configuration", "latency ms", "samples/s", "memory/device",
                                "costs", "chosen or rejected because");
  for (const PlanCandidate& row : plan.candidates) {
    const std::string latency = std::isfinite(row.predicted_seconds)
                                    ? fmt::format("{:.3f}", row.predicted_seconds * 1e3)
                                    : "-";
    const std::string rate =
        row.samples_per_second > 0 ? fmt::format("{:.1f}", row.samples_per_second) : "-";
    out += fmt::format("{} {:<14} {:<38} {:>12} {:>12} {:<22} {:<5} {}\n", row.chosen ? "*" : " ",
                       row.family, row.configuration, latency, rate, memory_text(row), key_of(row),
                       row.chosen ? "chosen" : row.rejected);
  }
  out +=
      "  memory/device: weights plus the most activations held at once over the predicted "
      "schedule (pipeline rows: per stage, with its samples in flight)\n";
  out += "  costs: node times, threads per worker they were taken at, convolution family, links\n";
  for (std::size_t k = 0; k < legend.size(); ++k)
    out += fmt::format("    {} = {}\n", cost_key(k), legend[k]);
  return out;
}

void add_split_and_stage_candidates(const Graph& graph, const CostTable& costs,
                                    const ModelPlanOptions& options, ModelPlan& plan) {
  const auto start = std::chrono::steady_clock::now();
  const auto listed = [&](const std::string& family) {
    return std::any_of(plan.candidates.begin(), plan.candidates.end(),
                       [&](const PlanCandidate& row) { return row.family == family; });
  };
  if (options.machine && options.machine->size() > 1 && !listed("spatial"))
    plan.candidates.push_back(spatial_row(graph, costs, *options.machine, plan, options.samples));
  if (options.samples > 1 && !listed("pipeline")) {
    PlanCandidate row = pipeline_candidate(graph, costs, options);
    if (row.rejected.empty()) {
      // Stages on a machine's devices are a plan file of their own (stage_plan.h).
      const std::string runs =
          options.machine
              ? "a plan of its own: `cleave plan --strategy pipeline --machine FILE --samples N` "
                "makes it, `mpirun cleave run --plan P --samples N` runs it"
              : fmt::format("runs with `cleave run --plan pipeline` ({})", row.configuration);
      row.rejected = row.predicted_seconds < plan.plan.makespan
                         ? runs
                         : fmt::format("not faster than {} ({:.3f} ms)", plan.configuration,
                                       plan.plan.makespan * 1e3);
    }
    plan.candidates.push_back(std::move(row));
  }
  plan.planning_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  plan.plan.notes["planning_seconds"] = plan.planning_seconds;
}

}  // namespace cleave
