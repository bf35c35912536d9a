// The (1+1) EA: mutate, keep the child when it is not worse.
#include "plan/schedule/evolution.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <random>

#include "ir/graph.h"
#include "plan/list_schedule.h"

namespace cleave {
namespace {

// A device other than `current`, drawn with probability proportional to 1 / time there.
int biased_other_device(const Task& task, int current, std::mt19937_64& random) {
  std::vector<double> weights(task.time.size(), 0.0);
  double total = 0;
  for (std::size_t device = 0; device < task.time.size(); ++device) {
    if (static_cast<int>(device) == current || !std::isfinite(task.time[device])) continue;
    // A zero-time device is the best possible choice: give it a large but finite weight.
    weights[device] = task.time[device] > 0 ? 1.0 / task.time[device] : 1e300;
    total += weights[device];
  }
  if (!(total > 0) || !std::isfinite(total)) {
    for (std::size_t device = 0; device < weights.size(); ++device) {
      weights[device] = weights[device] > 0 ? 1.0 : 0.0;
    }
  }
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  return pick(random);
}

}  // namespace

Plan plan_evolution(const TaskGraph& graph, const EvolutionOptions& options) {
  if (options.max_iterations < 0 || !(options.time_limit_seconds >= 0)) {
    throw Error("evolution: iterations and time limit must be non-negative");
  }
  const auto began = std::chrono::steady_clock::now();
  const AppendScheduler scheduler(graph, upward_rank_order(graph));
  std::vector<int> parent = fastest_feasible_assignment(graph, scheduler.priority(), "evolution");
  double parent_makespan = scheduler.makespan(parent);
  const double start_makespan = parent_makespan;
  MemoryTracker memory(graph);
  for (std::size_t task = 0; task < parent.size(); ++task) {
    memory.add(static_cast<int>(task), parent[task]);
  }

  const std::vector<int> movable = movable_tasks(graph);
  std::mt19937_64 random(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double rate = movable.empty() ? 0.0 : 1.0 / static_cast<double>(movable.size());

  int64_t iterations = 0;
  int64_t improvements = 0;
  int64_t rejected_for_memory = 0;
  std::vector<int> child = parent;
  std::vector<std::pair<int, int>> changes;  // (task, old device) to undo a rejected child
  while (!movable.empty() && iterations < options.max_iterations) {
    if ((iterations & 63) == 0 || options.time_limit_seconds == 0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (elapsed >= options.time_limit_seconds) break;
    }
    ++iterations;
    changes.clear();
    for (int task : movable) {
      if (unit(random) < rate) changes.emplace_back(task, child[task]);
    }
    if (changes.empty()) {
      const int task =
          movable[std::uniform_int_distribution<std::size_t>(0, movable.size() - 1)(random)];
      changes.emplace_back(task, child[task]);
    }
    for (const auto& [task, old_device] : changes) {
      const int new_device = biased_other_device(graph.tasks[task], old_device, random);
      memory.remove(task, old_device);
      memory.add(task, new_device);
      child[task] = new_device;
    }
    bool fits = true;
    for (const auto& [task, old_device] : changes) {
      fits = fits && memory.used(child[task]) <= graph.machine.devices[child[task]].memory_bytes;
    }
    const double makespan = fits ? scheduler.makespan(child) : 0.0;
    if (fits && std::isfinite(makespan) &&
        (makespan <= parent_makespan || !std::isfinite(parent_makespan))) {
      if (makespan < parent_makespan) ++improvements;
      parent_makespan = makespan;
      parent = child;
    } else {
      if (!fits) ++rejected_for_memory;
      for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
        memory.remove(it->first, child[it->first]);
        memory.add(it->first, it->second);
        child[it->first] = it->second;
      }
    }
  }
  if (!std::isfinite(parent_makespan)) {
    throw Error("evolution: found no assignment whose transfers all have links");
  }
  Plan plan = scheduler.to_plan(parent, "evolution");
  plan.notes["iterations"] = iterations;
  plan.notes["improvements"] = improvements;
  plan.notes["rejected_for_memory"] = rejected_for_memory;
  plan.notes["start_makespan"] = start_makespan;
  plan.notes["seed"] = options.seed;
  return plan;
}

}  // namespace cleave
