// Rank 0's `--plan auto` for ranks: the one auto's choice, runner-up and sequential, as plan JSON.
#include "pipeline/rank_auto.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "frontend/costs.h"
#include "pipeline/family_search.h"
#include "pipeline/plan_and_run.h"
#include "pipeline/spatial_run.h"
#include "plan/plan_memory.h"
#include "spatial/split_machine.h"
#include "spatial/split_recipe.h"
#include "support/error.h"
#include "support/process_memory.h"

namespace cleave {

namespace {

void log_line(const RankAutoOptions& options, const std::string& line) {
  if (options.log) options.log(line);
}

double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

// Per worker, the weights and the most activations a task plan holds (as auto's rows count).
std::vector<double> plan_memory_bytes(const ModelPlan& plan) {
  std::vector<int> worker_of_task(plan.tasks.tasks.size(), 0);
  for (const PlannedTask& placed : plan.plan.tasks) worker_of_task[placed.task] = placed.worker;
  std::vector<double> bytes = weight_bytes_per_worker(plan.tasks, worker_of_task);
  const std::vector<double> activations = peak_activation_bytes_per_worker(plan.plan, plan.tasks);
  bytes.resize(std::max(bytes.size(), activations.size()), 0.0);
  for (std::size_t d = 0; d < activations.size(); ++d) bytes[d] += activations[d];
  return bytes;
}

// The bytes of `graph`'s weights as loaded.
double initializer_bytes(const Graph& graph) {
  double bytes = 0;
  for (ValueId id : graph.initializers()) {
    const auto& data = *graph.value(id).initializer;
    if (data.bytes) bytes += static_cast<double>(data.bytes->size());
  }
  return bytes;
}

// Per rank, what a candidate holds beyond its steady state while it is made: `loaded` bytes of
// weights as loaded, and its own `weights` there again beside their packed copies.
std::vector<double> load_bytes_of(const std::vector<double>& weights, double loaded) {
  std::vector<double> bytes = weights;
  for (double& b : bytes) b += loaded;
  return bytes;
}

// A plan timed beside the choice shows the choice's table and says why it runs, as the thread
// check's plans do. `graph` is the one the plan runs over (a split's partitioned graph).
RankCandidate candidate_of(std::string role, ModelPlan plan, const ModelPlan& choice,
                           const Graph& graph, const std::string& fingerprint) {
  if (role != "choice") {
    plan.candidates = choice.candidates;
    plan.plan.notes["auto_choice"] = role;
  }
  plan.alternatives.clear();  // Only the plan itself travels.
  RankCandidate candidate;
  candidate.role = std::move(role);
  candidate.strategy = plan.plan.strategy;
  candidate.configuration = plan.configuration;
  candidate.memory_bytes = plan_memory_bytes(plan);
  std::vector<int> worker_of_task(plan.tasks.tasks.size(), 0);
  for (const PlannedTask& placed : plan.plan.tasks) worker_of_task[placed.task] = placed.worker;
  candidate.load_bytes =
      load_bytes_of(weight_bytes_per_worker(plan.tasks, worker_of_task), initializer_bytes(graph));
  candidate.plan = model_plan_to_json(plan, graph, fingerprint);
  return candidate;
}

// The spatial row on the ranks: timed beside the choice where predicted within
// kSplitTimedWithin of it. Returns whether it is timed.
bool judge_split_row(PlanCandidate& row, const ModelPlan& choice) {
  if (!row.rejected.empty()) return false;
  if (!row.cut_short.empty()) {  // Over fewer devices than ranks: no plan for every rank.
    row.rejected = fmt::format("over fewer devices than ranks ({}): not timed", row.cut_short);
    return false;
  }
  const double bound = kSplitTimedWithin * choice.plan.makespan;
  if (row.predicted_seconds < bound) {
    row.rejected = fmt::format("timed on the ranks beside {} (predicted within {:.2f}x of it)",
                               choice.configuration, kSplitTimedWithin);
    return true;
  }
  row.rejected = fmt::format("not within {:.2f}x of {} ({:.3f} ms): not timed", kSplitTimedWithin,
                             choice.configuration, choice.plan.makespan * 1e3);
  return false;
}

double memory_on(const RankCandidate& candidate, std::size_t rank) {
  return rank < candidate.memory_bytes.size() ? candidate.memory_bytes[rank] : 0.0;
}

double load_on(const RankCandidate& candidate, std::size_t rank) {
  return rank < candidate.load_bytes.size() ? candidate.load_bytes[rank] : 0.0;
}

// Every rank prepares every candidate at once: while their memory together at its worst moment
// (the steady state of all, and the load-time bytes of the one that loads most, made last) is
// over a rank's, the one other than the choice holding the most there goes. Measured with
// googlenet's candidates on 2 ranks, making all on rank 0 lifted rank 1's peak 25 MB above
// where it settled with nothing to run there: the model's 26.5 MB of weights as loaded
// (docs/results/distributed.md).
void drop_over_memory(std::vector<RankCandidate>& candidates, const std::vector<double>& memory,
                      const RankAutoOptions& options) {
  for (std::size_t rank = 0; rank < memory.size(); ++rank) {
    for (;;) {
      double total = 0, loading = 0;
      for (const RankCandidate& candidate : candidates) {
        if (!candidate.dropped.empty()) continue;
        total += memory_on(candidate, rank);
        loading = std::max(loading, load_on(candidate, rank));
      }
      total += loading;
      if (!(total > memory[rank])) break;
      RankCandidate* largest = nullptr;
      for (RankCandidate& candidate : candidates) {
        if (candidate.role == "choice" || !candidate.dropped.empty()) continue;
        if (!largest || memory_on(candidate, rank) >= memory_on(*largest, rank))
          largest = &candidate;
      }
      if (!largest) {
        log_line(options, fmt::format("ranks: the choice alone is predicted to hold {:.1f} MiB on "
                                      "rank {}, over its {:.1f} MiB; it runs all the same",
                                      mib(total), rank, mib(memory[rank])));
        break;
      }
      largest->dropped = fmt::format(
          "not prepared: with it the candidates would hold {:.1f} MiB on rank {} while the last "
          "is made, which has {:.1f} MiB; it holds the most there ({:.1f} MiB)",
          mib(total), rank, mib(memory[rank]), mib(memory_on(*largest, rank)));
      largest->plan = nullptr;  // Nothing of it travels but its name.
      largest->split = nullptr;
      log_line(options, fmt::format("ranks: dropped {} {}: {}", largest->role,
                                    largest->configuration, largest->dropped));
    }
  }
}

}  // namespace

Machine rank_auto_machine(const RankAutoOptions& options, int ranks) {
  if (options.machine.empty()) return ranks_without_machine_file(ranks, options.threads_per_worker);
  Machine machine = read_machine(options.machine);
  if (static_cast<int>(machine.size()) != ranks) {
    throw Error(fmt::format(
        "{}: the machine file names {} device(s), but {} ranks were started: --plan auto plans "
        "one rank per device (run it with mpirun -np {})",
        options.machine, machine.size(), ranks, machine.size()));
  }
  return machine;
}

std::vector<RankCandidate> plan_rank_candidates(const Graph& graph, const RankAutoOptions& options,
                                                int ranks) {
  ModelPlanOptions plan_options;
  plan_options.strategy = "auto";
  plan_options.machine = rank_auto_machine(options, ranks);
  plan_options.workers = ranks;
  plan_options.threads_per_worker = options.threads_per_worker;
  plan_options.samples = options.samples;
  CostedPlan costed = plan_with_costs(graph, options.costs, plan_options, options.log);
  ModelPlan& choice = costed.plan;
  // With the check the split is searched here, kept to be timed; else the table's row says
  // what runs it.
  std::optional<SpatialCandidate> spatial;
  bool time_split = false;
  if (options.check && plan_options.machine->size() > 1) {
    spatial = spatial_candidate(graph, costed.costs, *plan_options.machine, options.samples);
    time_split = judge_split_row(spatial->row, choice);
    choice.candidates.push_back(spatial->row);
  }
  add_split_and_stage_candidates(graph, costed.costs, plan_options, choice);
  for (const PlanCandidate& row : choice.candidates) {
    log_line(options, fmt::format("ranks: auto predicts {} ({}) at {:.3f} ms{}", row.configuration,
                                  row.family, row.predicted_seconds * 1e3,
                                  row.family == "spatial" && row.rejected.rfind("a split", 0) == 0
                                      ? ": a split, not timed on ranks"
                                      : ""));
  }
  log_line(options, fmt::format("ranks: auto's choice {} at {:.3f} ms", choice.configuration,
                                choice.plan.makespan * 1e3));
  const std::string fingerprint = graph_fingerprint(graph);
  std::vector<RankCandidate> candidates;
  candidates.push_back(candidate_of("choice", choice, choice, graph, fingerprint));
  if (!options.check) return candidates;
  // The thread check's runner-up: with a machine, the fastest other plan that is not
  // sequential, of another family where there is one; and on ranks one that runs otherwise
  // than a plan timed anyway: a planner may put every task on rank 0 (lc on squeezenet1_0,
  // 39 tasks on rank 0, none on rank 1), which is the sequential plan.
  RunRecipe recipe;
  recipe.machine = plan_options.machine;
  const auto runs_otherwise = [&choice](const ModelPlan& plan) {
    const auto& order = plan.plan.order;
    const bool all_on_rank_0 =
        std::all_of(order.begin() + (order.empty() ? 0 : 1), order.end(),
                    [](const std::vector<int>& tasks) { return tasks.empty(); });
    return !all_on_rank_0 && order != choice.plan.order;
  };
  if (const ModelPlan* second = check_runner_up(choice, recipe, runs_otherwise)) {
    candidates.push_back(candidate_of("runner-up", *second, choice, graph, fingerprint));
  } else {
    log_line(options, "ranks: no runner-up: every other plan runs as the choice or all on rank 0");
  }
  if (time_split) {
    const Graph& partitioned = spatial->split->graph;
    RankCandidate split =
        candidate_of("split", *spatial->plan, choice, partitioned, graph_fingerprint(partitioned));
    split.split = split_recipe_json(spatial->options);
    const PlanCandidate& row = spatial->row;
    split.memory_bytes = row.memory_bytes;
    split.memory_bytes.resize(std::max(row.memory_bytes.size(), row.activation_bytes.size()), 0);
    for (std::size_t d = 0; d < row.activation_bytes.size(); ++d)
      split.memory_bytes[d] += row.activation_bytes[d];
    // Each rank loads the model and makes the partitioned graph of it (candidate_graph).
    split.load_bytes =
        load_bytes_of(row.memory_bytes, initializer_bytes(graph) + initializer_bytes(partitioned));
    candidates.push_back(std::move(split));
  }
  if (choice.plan.strategy != "sequential") {
    ModelPlanOptions sequential = plan_options;
    sequential.strategy = "sequential";
    try {
      candidates.push_back(candidate_of("sequential", plan_model(graph, costed.costs, sequential),
                                        choice, graph, fingerprint));
    } catch (const Error& e) {
      // Rank 0 alone may not hold the model (a machine file's memories): nothing to time.
      log_line(options, fmt::format("ranks: all on rank 0 is not timed: {}", e.what()));
    }
  }
  drop_over_memory(candidates, rank_memory_bytes(*plan_options.machine, ranks), options);
  for (const RankCandidate& candidate : candidates) {
    if (candidate.dropped.empty())
      log_line(options,
               fmt::format("ranks: to time: {} {}", candidate.role, candidate.configuration));
  }
  return candidates;
}

std::vector<double> rank_memory_bytes(const Machine& machine, int ranks) {
  const double available = available_memory_bytes();
  std::vector<double> memory;
  for (int rank = 0; rank < ranks; ++rank) {
    const double device = static_cast<std::size_t>(rank) < machine.size()
                              ? machine.devices[rank].memory_bytes
                              : std::numeric_limits<double>::infinity();
    memory.push_back(std::isfinite(device) ? device
                     : available > 0       ? available / ranks
                                           : std::numeric_limits<double>::infinity());
  }
  return memory;
}

Graph candidate_graph(Graph model, const RankCandidate& candidate) {
  if (candidate.split.is_null()) return model;
  const std::string origin =
      fmt::format("--plan auto's split ({}, sent by rank 0)", candidate.configuration);
  SplitModelOptions options = split_recipe_from_json(candidate.split, model, origin);
  Graph partitioned;
  try {
    partitioned = std::move(split_model(model, options).partitioned.graph);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("{}: the split cannot be made of the model loaded here: {}", origin, e.what()));
  }
  // The plan names the partitioned graph rank 0 made; any other would run other nodes.
  const std::string there = candidate.plan.is_object()
                                ? candidate.plan.value("model_fingerprint", std::string())
                                : std::string();
  const std::string here = graph_fingerprint(partitioned);
  if (here != there) {
    throw Error(fmt::format(
        "{}: the split made here is not the one rank 0 made (partitioned graph fingerprint {} "
        "here, {} on rank 0): the recipe or the model loaded differs between the ranks",
        origin, here, there.empty() ? "none" : there));
  }
  return partitioned;
}

std::string rank_candidates_text(const std::vector<RankCandidate>& candidates) {
  nlohmann::json list = nlohmann::json::array();
  for (const RankCandidate& candidate : candidates) {
    list.push_back({{"role", candidate.role},
                    {"strategy", candidate.strategy},
                    {"configuration", candidate.configuration},
                    {"plan", candidate.plan},
                    {"split", candidate.split},
                    {"memory_bytes", candidate.memory_bytes},
                    {"load_bytes", candidate.load_bytes},
                    {"dropped", candidate.dropped}});
  }
  return list.dump();
}

std::vector<RankCandidate> rank_candidates_from_text(const std::string& text) {
  std::vector<RankCandidate> candidates;
  try {
    const nlohmann::json list = nlohmann::json::parse(text);
    for (const nlohmann::json& entry : list) {
      RankCandidate candidate;
      candidate.role = entry.at("role").get<std::string>();
      candidate.strategy = entry.at("strategy").get<std::string>();
      candidate.configuration = entry.at("configuration").get<std::string>();
      candidate.plan = entry.at("plan");
      candidate.split = entry.value("split", nlohmann::json());
      candidate.memory_bytes = entry.value("memory_bytes", std::vector<double>());
      candidate.load_bytes = entry.value("load_bytes", std::vector<double>());
      candidate.dropped = entry.value("dropped", std::string());
      candidates.push_back(std::move(candidate));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("rank 0's candidate plans: {}", e.what()));
  }
  if (candidates.empty()) throw Error("rank 0's candidate plans: none");
  if (!candidates.front().dropped.empty())
    throw Error("rank 0's candidate plans: the first, the choice, is dropped; it always runs");
  return candidates;
}

}  // namespace cleave
