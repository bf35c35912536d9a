// The name -> planner table behind `cleave schedule --algo`.
#include "plan/schedulers.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "ir/graph.h"
#include "plan/annealing.h"
#include "plan/coarsen.h"
#include "plan/evolution.h"
#include "plan/greedy.h"
#include "plan/heft.h"
#include "plan/lower_bound.h"
#include "plan/met.h"
#include "plan/milp.h"
#include "plan/milp_split.h"

namespace cleave {

const std::vector<SchedulerEntry>& schedulers() {
  static const std::vector<SchedulerEntry> table = {
      {"met", "minimum execution time: each task on its fastest device",
       [](const TaskGraph& graph, const ScheduleOptions&) { return plan_met(graph, {}); }},
      {"greedy", "topological order, each task where it finishes earliest (appended)",
       [](const TaskGraph& graph, const ScheduleOptions&) { return plan_greedy(graph, {}); }},
      {"heft", "heterogeneous earliest finish time, upward rank, insertion",
       [](const TaskGraph& graph, const ScheduleOptions&) { return plan_heft(graph, {}); }},
      {"annealing", "simulated annealing over assignments (seeded)",
       [](const TaskGraph& graph, const ScheduleOptions& options) {
         AnnealingOptions annealing;
         annealing.seed = options.seed;
         annealing.max_iterations = options.max_iterations;
         annealing.time_limit_seconds = options.time_limit_seconds;
         return plan_annealing(graph, annealing);
       }},
      {"evolution", "biased (1+1) evolutionary algorithm over assignments (seeded)",
       [](const TaskGraph& graph, const ScheduleOptions& options) {
         EvolutionOptions evolution;
         evolution.seed = options.seed;
         evolution.max_iterations = options.max_iterations;
         evolution.time_limit_seconds = options.time_limit_seconds;
         return plan_evolution(graph, evolution);
       }},
      {"milp", "exact mixed-integer program (DiviML), COIN-OR CBC, within the time limit",
       [](const TaskGraph& graph, const ScheduleOptions& options) {
         MilpOptions milp;
         milp.time_limit_seconds = options.time_limit_seconds;
         milp.symmetry = parse_symmetry_breaking(options.symmetry);
         milp.relative_gap = options.relative_gap;
         milp.threads = options.solver_threads > 0
                            ? options.solver_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
         return plan_milp(graph, milp);
       }},
      {"milp-split", "MILP per module of a modular graph, combined by a DP over device pairs",
       [](const TaskGraph& graph, const ScheduleOptions& options) {
         MilpSplitOptions split;
         split.time_limit_seconds = options.time_limit_seconds;
         split.module.time_limit_seconds = options.time_limit_seconds;
         split.module.symmetry = parse_symmetry_breaking(options.symmetry);
         split.module.relative_gap = options.relative_gap;
         split.channels = options.channels;
         split.parallel_solves = options.solver_processes;
         return plan_milp_split(graph, split);
       }},
  };
  return table;
}

std::optional<LowerBound> lower_bound_function() {
  return LowerBound([](const TaskGraph& graph, const ScheduleOptions& options) {
    LowerBoundOptions bound;
    // Half of the limit: the bound judges the plan, and must leave the planner (and the
    // command) its time; once spent it returns the best bound found so far (timed_out).
    bound.time_limit_seconds = options.time_limit_seconds / 2;
    bound.subproblem.time_limit_seconds = bound.time_limit_seconds;
    bound.subproblem.verbosity = 0;
    bound.channels = options.channels;
    return makespan_lower_bound(graph, bound);
  });
}

Plan schedule(const TaskGraph& graph, const std::string& algo, const ScheduleOptions& options) {
  if (options.objective != "latency" && options.objective != "throughput") {
    throw Error(fmt::format("schedule: objective must be \"latency\" or \"throughput\", got \"{}\"",
                            options.objective));
  }
  for (const SchedulerEntry& entry : schedulers()) {
    if (entry.name != algo) continue;
    const auto began = std::chrono::steady_clock::now();
    Plan plan;
    if (options.coarsen) {
      const CoarseGraph coarse = contract_chains(graph);
      plan = expand_plan(entry.run(coarse.graph, options), coarse, graph);
    } else {
      plan = entry.run(graph, options);
    }
    plan.notes["solve_seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    plan.objective = options.objective;
    plan.batch = options.batch;
    return plan;
  }
  std::vector<std::string> names;
  for (const SchedulerEntry& entry : schedulers()) names.push_back(entry.name);
  throw Error(
      fmt::format("schedule: unknown algorithm \"{}\" (known: {})", algo, fmt::join(names, ", ")));
}

}  // namespace cleave
