// Rank 0's `--plan auto` for ranks: the one auto's choice, runner-up and sequential, as plan JSON.
#include "pipeline/rank_auto.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "frontend/costs.h"
#include "pipeline/family_search.h"
#include "pipeline/plan_and_run.h"
#include "spatial/split_machine.h"
#include "support/error.h"

namespace cleave {

namespace {

void log_line(const RankAutoOptions& options, const std::string& line) {
  if (options.log) options.log(line);
}

// A plan timed beside the choice shows the choice's table and says why it runs, as the thread
// check's plans do.
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
  candidate.plan = model_plan_to_json(plan, graph, fingerprint);
  return candidate;
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
  for (const RankCandidate& candidate : candidates)
    log_line(options,
             fmt::format("ranks: to time: {} {}", candidate.role, candidate.configuration));
  return candidates;
}

std::string rank_candidates_text(const std::vector<RankCandidate>& candidates) {
  nlohmann::json list = nlohmann::json::array();
  for (const RankCandidate& candidate : candidates) {
    list.push_back({{"role", candidate.role},
                    {"strategy", candidate.strategy},
                    {"configuration", candidate.configuration},
                    {"plan", candidate.plan}});
  }
  return list.dump();
}

std::vector<RankCandidate> rank_candidates_from_text(const std::string& text) {
  std::vector<RankCandidate> candidates;
  try {
    const nlohmann::json list = nlohmann::json::parse(text);
    for (const nlohmann::json& entry : list) {
      candidates.push_back({entry.at("role").get<std::string>(),
                            entry.at("strategy").get<std::string>(),
                            entry.at("configuration").get<std::string>(), entry.at("plan")});
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("rank 0's candidate plans: {}", e.what()));
  }
  if (candidates.empty()) throw Error("rank 0's candidate plans: none");
  return candidates;
}

}  // namespace cleave
