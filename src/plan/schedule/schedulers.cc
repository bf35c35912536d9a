// `cleave schedule --algo`: the heterogeneous planners of the registry on any task graph.
#include "plan/schedule/schedulers.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "ir/graph.h"
#include "plan/registry.h"
#include "plan/schedule/coarsen.h"
#include "plan/schedule/lower_bound.h"

namespace cleave {

const std::vector<SchedulerEntry>& schedulers() {
  static const std::vector<SchedulerEntry> table = [] {
    std::vector<SchedulerEntry> entries;
    for (const PlannerEntry& entry : planners()) {
      if (entry.family != PlannerFamily::kHeterogeneous) continue;
      entries.push_back({entry.name, entry.description,
                         [run = entry.run](const TaskGraph& graph, const ScheduleOptions& options) {
                           return run(graph, 1, options).plan;
                         }});
    }
    return entries;
  }();
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
