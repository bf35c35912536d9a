// Simulated annealing: random single-task moves under a geometric cooling schedule.
#include "plan/schedule/annealing.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <random>

#include "ir/graph.h"
#include "plan/list_schedule.h"

namespace cleave {
namespace {

// A device other than `current` that can run the task, uniformly at random.
int random_other_device(const Task& task, int current, std::mt19937_64& random) {
  std::vector<int> choices;
  for (std::size_t device = 0; device < task.time.size(); ++device) {
    if (static_cast<int>(device) != current && std::isfinite(task.time[device])) {
      choices.push_back(static_cast<int>(device));
    }
  }
  return choices[std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(random)];
}

}  // namespace

Plan plan_annealing(const TaskGraph& graph, const AnnealingOptions& options) {
  if (options.max_iterations < 0 || !(options.time_limit_seconds >= 0) ||
      !(options.final_temperature_ratio > 0 && options.final_temperature_ratio <= 1) ||
      !(options.initial_temperature >= 0)) {
    throw Error(
        "annealing: iterations and time limit must be non-negative, the final "
        "temperature ratio in (0, 1], the initial temperature non-negative");
  }
  const auto began = std::chrono::steady_clock::now();
  const AppendScheduler scheduler(graph, upward_rank_order(graph));
  std::vector<int> current = fastest_feasible_assignment(graph, scheduler.priority(), "annealing");
  MemoryTracker memory(graph);
  for (std::size_t task = 0; task < current.size(); ++task) {
    memory.add(static_cast<int>(task), current[task]);
  }
  double current_makespan = scheduler.makespan(current);
  const double start_makespan = current_makespan;
  std::vector<int> best = current;
  double best_makespan = current_makespan;
  const std::vector<int> movable = movable_tasks(graph);
  std::mt19937_64 random(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);

  double temperature = options.initial_temperature;
  if (temperature == 0 && !movable.empty()) {
    // Probe a few moves from the start and take the mean worsening among them.
    double worsening = 0;
    int worse = 0;
    std::vector<int> probe = current;
    for (int i = 0; i < 64; ++i) {
      const int task =
          movable[std::uniform_int_distribution<std::size_t>(0, movable.size() - 1)(random)];
      const int old_device = probe[task];
      probe[task] = random_other_device(graph.tasks[task], old_device, random);
      const double makespan = scheduler.makespan(probe);
      if (std::isfinite(makespan) && makespan > current_makespan) {
        worsening += makespan - current_makespan;
        ++worse;
      }
      probe[task] = old_device;
    }
    temperature = worse > 0 ? (worsening / worse) / std::log(2.0) : 1e-3 * current_makespan;
  }
  const double initial_temperature = temperature;

  int64_t iterations = 0;
  int64_t accepted = 0;
  int64_t rejected_for_memory = 0;
  const bool can_move = !movable.empty() && temperature > 0;
  double elapsed = 0;
  while (can_move && iterations < options.max_iterations) {
    // Reading the clock costs little next to one evaluation (a pass over the whole graph).
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (elapsed >= options.time_limit_seconds) break;
    ++iterations;
    // Cool by the larger used fraction of the two budgets, so a time-limited run still ends
    // cold.
    const double progress =
        std::max(static_cast<double>(iterations) /
                     static_cast<double>(std::max<int64_t>(options.max_iterations, 1)),
                 elapsed / options.time_limit_seconds);
    temperature = initial_temperature * std::pow(options.final_temperature_ratio, progress);

    const int task =
        movable[std::uniform_int_distribution<std::size_t>(0, movable.size() - 1)(random)];
    const int from = current[task];
    const int to = random_other_device(graph.tasks[task], from, random);
    if (!memory.fits_move(task, from, to)) {
      ++rejected_for_memory;
      continue;
    }
    current[task] = to;
    const double makespan = scheduler.makespan(current);
    const double worsening = makespan - current_makespan;
    if (std::isfinite(makespan) &&
        (worsening <= 0 || unit(random) < std::exp(-worsening / temperature))) {
      memory.remove(task, from);
      memory.add(task, to);
      current_makespan = makespan;
      ++accepted;
      if (makespan < best_makespan) {
        best_makespan = makespan;
        best = current;
      }
    } else {
      current[task] = from;
    }
  }
  if (!std::isfinite(best_makespan)) {
    throw Error("annealing: found no assignment whose transfers all have links");
  }
  Plan plan = scheduler.to_plan(best, "annealing");
  plan.notes["iterations"] = iterations;
  plan.notes["accepted"] = accepted;
  plan.notes["rejected_for_memory"] = rejected_for_memory;
  plan.notes["start_makespan"] = start_makespan;
  plan.notes["initial_temperature"] = initial_temperature;
  plan.notes["seed"] = options.seed;
  return plan;
}

}  // namespace cleave
