// `auto`'s candidate space in the frontend: families, splits of the cores, hybrid threads.
#include "frontend/auto_search.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "frontend/candidate_costs.h"
#include "frontend/costs.h"
#include "frontend/stage_plan.h"
#include "plan/cluster/hypercluster.h"
#include "plan/list_schedule.h"
#include "plan/plan_memory.h"
#include "plan/registry.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"

namespace cleave {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// A parallel plan must win clearly: predictions carry noise, sequential carries none.
constexpr double kParallelMargin = 0.98;
// Each clone tried re-schedules the whole graph: auto tries this many per split, which
// leaves the search unbounded on graphs of a few hundred tasks and bounds it beyond.
constexpr int64_t kCloneTrials = 128;
// MILP-SPLIT searches until its limit; auto gives it at most this much of the planning time,
// so that the whole search stays near a second (issue 46); `cleave schedule` gives it more.
constexpr double kMilpBudgetSeconds = 0.25;

std::string plural(int count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string split_text(int workers, int threads) {
  return fmt::format("{} x {}", plural(workers, "worker", "workers"),
                     plural(threads, "thread", "threads"));
}

double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

std::vector<int> worker_of_tasks(const ModelPlan& plan) {
  std::vector<int> worker_of_task(plan.tasks.tasks.size(), 0);
  for (const auto& placement : plan.plan.tasks) {
    if (placement.task >= 0 && static_cast<std::size_t>(placement.task) < worker_of_task.size())
      worker_of_task[placement.task] = placement.worker;
  }
  return worker_of_task;
}

// The first device whose weights and peak activations exceed its memory, or -1.
int over_memory_device(const Machine& machine, const PlanCandidate& candidate) {
  for (std::size_t d = 0; d < machine.devices.size() && d < candidate.memory_bytes.size(); ++d) {
    const double held =
        candidate.memory_bytes[d] +
        (d < candidate.activation_bytes.size() ? candidate.activation_bytes[d] : 0.0);
    // Planners sum weights in another order: allow rounding slack.
    const double memory = machine.devices[d].memory_bytes;
    if (held > memory + 1e-9 * memory) return static_cast<int>(d);
  }
  return -1;
}

// `workers` CPU workers with their own thread counts, on consecutive cores.
Machine cpu_workers_with(const std::vector<int>& threads, const HostLinks& links) {
  Machine machine = cpu_machine(static_cast<int>(threads.size()), 1, links);
  int core = 0;
  for (std::size_t w = 0; w < threads.size(); ++w) {
    machine.devices[w].threads = threads[w];
    machine.devices[w].cores.clear();
    for (int k = 0; k < threads[w]; ++k) machine.devices[w].cores.push_back(core++);
  }
  return machine;
}

// Ramiel's downstream intra-op: the spare cores go one by one to the worker whose clusters
// take longest at the threads it has so far.
std::vector<int> threads_by_weight(const ModelPlan& plan, const CostTable& costs, int cores) {
  const std::size_t workers = plan.plan.order.size();
  std::vector<int> threads(workers, 1);
  const auto busy = [&](std::size_t w) {
    double seconds = 0;
    for (int task : plan.plan.order[w])
      seconds += costs.seconds(plan.tasks.tasks[task].node, threads[w]);
    return seconds;
  };
  std::vector<double> load(workers);
  for (std::size_t w = 0; w < workers; ++w) load[w] = busy(w);
  for (int spare = cores - static_cast<int>(workers); spare > 0; --spare) {
    const std::size_t busiest = std::max_element(load.begin(), load.end()) - load.begin();
    ++threads[busiest];
    load[busiest] = busy(busiest);
  }
  return threads;
}

// The same clusters and orders on workers of `threads` each: every task re-costed at its
// worker's thread count and the plan simulated again.
ModelPlan rethreaded(ModelPlan plan, const CostTable& costs, const std::vector<int>& threads) {
  plan.tasks.machine = cpu_workers_with(threads, costs.host_links);
  const bool busy = costs.has_busy_seconds();
  for (Task& task : plan.tasks.tasks) {
    task.time.assign(threads.size(), 0);
    task.busy_time.assign(busy ? threads.size() : 0, 0);
    for (std::size_t d = 0; d < threads.size(); ++d) {
      task.time[d] = costs.seconds(task.node, threads[d]);
      if (busy) task.busy_time[d] = costs.busy_seconds(task.node, threads[d]);
    }
  }
  apply_simulation(plan.plan, simulate(plan.plan, plan.tasks));
  plan.threads_per_worker = *std::max_element(threads.begin(), threads.end());
  plan.plan.notes["hybrid_threads"] = threads;
  return plan;
}

std::string threads_text(const std::vector<int>& threads) {
  return fmt::format("{}", fmt::join(threads, "+"));
}

// The table in the making, and the fastest plan so far that fits.
struct Search {
  const Graph& graph;
  const CostTable& costs;
  const ModelPlanOptions& options;
  std::vector<PlanCandidate> rows;
  ModelPlan best;
  double best_seconds = kInfinity;
  std::map<std::string, ModelPlan> family_best;  // By family, "hybrid" apart from "task".
  std::vector<ModelPlan> fastest;                // The two fastest, fastest first.

  PlanCandidate row(const std::string& strategy, const std::string& family,
                    const std::string& configuration) const {
    PlanCandidate candidate;
    candidate.strategy = strategy;
    candidate.family = family;
    candidate.configuration = configuration;
    candidate.predicted_seconds = kInfinity;
    return candidate;
  }

  void consider(ModelPlan plan, PlanCandidate candidate) {
    // Planners search with each task's time alone; where two or more workers compute, the
    // plan is priced at the busy-neighbour times (the simulator's choice), whichever planner
    // made it.
    if (prices_beside_busy(plan.plan, plan.tasks))
      apply_simulation(plan.plan, simulate(plan.plan, plan.tasks));
    candidate.predicted_seconds = plan.plan.makespan;
    candidate.costs = describe_costs(costs, plan, options.machine.has_value());
    if (options.samples > 1 && plan.plan.makespan > 0)
      candidate.samples_per_second = options.samples / plan.plan.makespan;
    const std::vector<int> worker_of_task = worker_of_tasks(plan);
    candidate.memory_bytes = weight_bytes_per_worker(plan.tasks, worker_of_task);
    candidate.activation_bytes = peak_activation_bytes_per_worker(plan.plan, plan.tasks);
    const int over = options.machine ? over_memory_device(plan.tasks.machine, candidate) : -1;
    if (over >= 0) {
      // A plan whose weights and activations do not fit a device cannot run there, however
      // fast.
      const Device& device = plan.tasks.machine.devices[over];
      candidate.rejected = fmt::format(
          "over memory: device {} '{}' would hold {:.1f} MiB of weights and {:.1f} MiB of "
          "activations, has {:.1f} MiB",
          over, device.name, mib(candidate.memory_bytes[over]),
          mib(candidate.activation_bytes[over]), mib(device.memory_bytes));
    }
    rows.push_back(candidate);
    if (over >= 0) return;
    plan.family = candidate.family;
    plan.configuration = candidate.configuration;
    plan.convolution_family = costs.convolution_family;
    keep_alternative(plan);
    const double margin = candidate.family == "sequential" ? 1.0 : kParallelMargin;
    if (plan.plan.makespan < best_seconds * margin) {
      best_seconds = plan.plan.makespan;
      best = std::move(plan);
      best.family = candidate.family;
      best.configuration = candidate.configuration;
    }
  }

  // Copies only a plan that beats its family's best or one of the two fastest so far.
  void keep_alternative(const ModelPlan& plan) {
    const double seconds = plan.plan.makespan;
    const std::string key = plan.plan.notes.contains("hybrid_threads") ? "hybrid" : plan.family;
    const auto found = family_best.find(key);
    if (found == family_best.end() || seconds < found->second.plan.makespan)
      family_best[key] = plan;
    if (fastest.size() < 2 || seconds < fastest.back().plan.makespan) {
      if (fastest.size() == 2) fastest.pop_back();
      const auto at = std::find_if(fastest.begin(), fastest.end(), [&](const ModelPlan& kept) {
        return seconds < kept.plan.makespan;
      });
      fastest.insert(at, plan);
    }
  }

  // Every kept plan but the chosen one, once each, fastest first.
  std::vector<ModelPlan> alternatives_to(const std::string& chosen_configuration) {
    std::vector<ModelPlan> all = std::move(fastest);
    for (auto& [key, plan] : family_best) all.push_back(std::move(plan));
    std::stable_sort(all.begin(), all.end(), [](const ModelPlan& a, const ModelPlan& b) {
      return a.plan.makespan < b.plan.makespan;
    });
    std::vector<ModelPlan> unique;
    for (ModelPlan& plan : all) {
      const bool seen = plan.configuration == chosen_configuration ||
                        std::any_of(unique.begin(), unique.end(), [&](const ModelPlan& kept) {
                          return kept.configuration == plan.configuration;
                        });
      if (!seen) unique.push_back(std::move(plan));
    }
    return unique;
  }

  // Plans one candidate; a planner's refusal on a machine file (its own over-memory plan, a
  // MILP without a solution in its budget) is a rejected row, not the end of `auto`.
  template <typename Make>
  void attempt(PlanCandidate candidate, const Make& make) {
    ModelPlan plan;
    try {
      plan = make();
      // A solver stopped by its time limit returns its best so far: the table says so.
      const auto& notes = plan.plan.notes;
      if (notes.contains("status") && notes.at("status") == "time_limit")
        candidate.cut_short = fmt::format("{} stopped at its time budget", candidate.strategy);
    } catch (const Error& e) {
      if (!options.machine && candidate.family != "heterogeneous") throw;
      candidate.rejected = e.what();
      rows.push_back(std::move(candidate));
      return;
    }
    consider(std::move(plan), std::move(candidate));
  }
};

std::vector<const PlannerEntry*> task_planners(const ModelPlanOptions& options) {
  std::vector<const PlannerEntry*> chosen;
  for (const PlannerEntry& entry : planners()) {
    // A generated program runs each worker's samples one after another: hyperclusters, which
    // interleave them, are left out with the planners that copy nodes.
    if (entry.auto_candidate && entry.plans_samples == (options.samples > 1) &&
        !(options.each_node_once && (!entry.before_copies.empty() || entry.plans_samples))) {
      chosen.push_back(&entry);
    }
  }
  return chosen;
}

// One planner's plan on `workers` x cores / workers threads, then its hybrid: the same
// clusters with the cores given by their weight. Returns the better prediction of the two.
double plan_split(Search& search, const PlannerEntry& planner, int cores, int workers) {
  const ModelPlanOptions& options = search.options;
  ModelPlanOptions split = options;
  split.workers = workers;
  split.threads_per_worker = cores / workers;
  ModelPlan plan = plan_with_planner(search.graph, search.costs, split, planner.name, kCloneTrials);
  double best = plan.plan.makespan;
  const bool hybrid = workers < cores && !options.each_node_once;
  const std::vector<int> by_weight =
      hybrid ? threads_by_weight(plan, search.costs, cores) : std::vector<int>{};
  ModelPlan even = hybrid ? plan : ModelPlan{};
  // The even split first, so that a tie keeps the simpler plan.
  search.consider(std::move(plan),
                  search.row(planner.name, "task",
                             fmt::format("{}, {}", planner.name,
                                         split_text(workers, split.threads_per_worker))));
  if (hybrid && std::adjacent_find(by_weight.begin(), by_weight.end(), std::not_equal_to<>()) !=
                    by_weight.end()) {
    ModelPlan threaded = rethreaded(std::move(even), search.costs, by_weight);
    best = std::min(best, threaded.plan.makespan);
    search.consider(
        std::move(threaded),
        search.row(planner.name, "task",
                   fmt::format("hybrid {}, threads {}", planner.name, threads_text(by_weight))));
  }
  return best;
}

// Task-parallel, hybrid and data-parallel plans at every split of `cores` CPU cores. A
// planner that copies another's plan (clone after lc) re-schedules the graph per copy tried:
// it runs once, at the split where the plan it copies from did best.
void search_cpu_splits(Search& search, int cores) {
  const ModelPlanOptions& options = search.options;
  std::map<std::string, std::pair<double, int>> best_split;  // Planner: seconds, workers.
  const int fewest = options.fixed_workers ? options.workers : 2;
  const int most = options.fixed_workers ? options.workers : cores;
  for (int workers = fewest; workers <= most && workers >= 2; ++workers) {
    if (options.samples >= workers) {
      // Before the planners: on a tie the plan without hand-offs between workers is kept.
      const int threads = cores / workers;
      search.attempt(
          search.row("data-parallel", "data-parallel", split_text(workers, threads)), [&] {
            return plan_data_parallel(search.graph, search.costs,
                                      cpu_workers(workers, threads, search.costs.host_links),
                                      options.samples);
          });
    }
    for (const PlannerEntry* planner : task_planners(options)) {
      if (!planner->before_copies.empty()) continue;
      const double seconds = plan_split(search, *planner, cores, workers);
      auto [entry, fresh] = best_split.try_emplace(planner->name, seconds, workers);
      if (!fresh && seconds < entry->second.first) entry->second = {seconds, workers};
    }
  }
  for (const PlannerEntry* planner : task_planners(options)) {
    const auto base = best_split.find(planner->before_copies);
    if (planner->before_copies.empty() || base == best_split.end()) continue;
    plan_split(search, *planner, cores, base->second.second);
  }
}

bool devices_differ(const Machine& machine) {
  for (std::size_t d = 1; d < machine.size(); ++d) {
    if (!machine.identical(0, d) || machine.devices[d].threads != machine.devices[0].threads)
      return true;
  }
  return false;
}

// A stream of samples through a stage per device (stage_plan.h), balanced at each device's
// speed: where the model's weights fit no one device, or the devices differ in speed, it can
// beat each device its own samples. Its configuration is known once planned.
void search_stages(Search& search, const Machine& machine) {
  PlanCandidate row = search.row("pipeline", "pipeline", "stages, one per device");
  ModelPlan plan;
  try {
    plan = best_stage_plan(search.graph, search.costs, machine, search.options.samples);
  } catch (const Error& e) {
    row.rejected = fmt::format("no stages: {}", e.what());
    search.rows.push_back(std::move(row));
    return;
  }
  row.configuration = plan.configuration;
  search.consider(std::move(plan), std::move(row));
}

// A machine file's devices are the workers: task planners, heterogeneous schedules, and for
// several samples each device its own samples or a stage per device.
void search_machine(Search& search, const Machine& machine) {
  const ModelPlanOptions& options = search.options;
  const int devices = static_cast<int>(machine.size());
  if (devices < 2) return;
  const std::string on = plural(devices, "device", "devices");
  if (options.samples >= 2) {
    // Before the planners: on a tie the plan without hand-offs between devices is kept.
    search.attempt(
        search.row("data-parallel", "data-parallel", fmt::format("{}, each its own samples", on)),
        [&] {
          return plan_data_parallel(search.graph, search.costs, machine, options.samples,
                                    ModelValues::kFromRank0);
        });
  }
  for (const PlannerEntry* planner : task_planners(options)) {
    search.attempt(search.row(planner->name, "task", fmt::format("{}, {}", planner->name, on)),
                   [&] {
                     return plan_with_planner(search.graph, search.costs, options, planner->name,
                                              kCloneTrials);
                   });
  }
  if (options.samples >= 2) search_stages(search, machine);
  if (options.samples == 1) {
    // Devices may differ in speed and memory, which lc and clone ignore and HEFT weighs (it
    // places a task only where its weights still fit).
    search.attempt(search.row("heft", "heterogeneous", fmt::format("heft, {}", on)),
                   [&] { return plan_with_planner(search.graph, search.costs, options, "heft"); });
    if (devices_differ(machine)) {
      ModelPlanOptions bounded = options;
      bounded.time_limit_seconds = std::min(options.time_limit_seconds, kMilpBudgetSeconds);
      search.attempt(
          search.row("milp-split", "heterogeneous",
                     fmt::format("milp-split, {}, {:g} s budget", on, bounded.time_limit_seconds)),
          [&] { return plan_with_planner(search.graph, search.costs, bounded, "milp-split"); });
    }
  }
}

// The sequential plan on fewer threads than cores (powers of two). The profile times every
// thread count: a small model's nodes can take longer on two threads than on one, where
// splitting each node's work costs more than it saves; a plan on all cores is then slower
// than on one, and only this row shows it.
void search_sequential_threads(Search& search, int cores) {
  for (int threads = 1; threads < cores; threads *= 2) {
    ModelPlanOptions fewer = search.options;
    fewer.workers = 1;
    fewer.threads_per_worker = threads;
    search.attempt(search.row("sequential", "sequential", split_text(1, threads)),
                   [&] { return plan_sequential(search.graph, search.costs, fewer); });
  }
}

int most_threads(const Machine& machine) {
  int threads = 1;
  for (const Device& device : machine.devices) threads = std::max(threads, device.threads);
  return threads;
}

// A machine file's devices are MPI ranks: the model's inputs and outputs pass through rank 0.
ModelValues model_values_of(const ModelPlanOptions& options) {
  return options.machine ? ModelValues::kFromRank0 : ModelValues::kShared;
}

// Each sample's tasks after the previous sample's, in upward rank order within a sample: a
// worker that runs whole samples (the sequential plan, each data-parallel worker) runs them one
// after another, as the profile timed whole runs. In upward rank order alone it would run each
// node for all of its samples before the next node, holding every sample's activations at once.
// The makespan is the same: none of its tasks waits on another worker.
std::vector<int> sample_by_sample_order(const TaskGraph& tasks) {
  std::vector<int> order = upward_rank_order(tasks);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return tasks.tasks[a].batch_begin < tasks.tasks[b].batch_begin;
  });
  return order;
}

std::string sequential_text(const ModelPlanOptions& options) {
  if (options.machine)
    return fmt::format("all on device 0 '{}'", options.machine->devices.front().name);
  return split_text(1, options.workers * options.threads_per_worker);
}

}  // namespace

ModelPlan plan_sequential(const Graph& graph, const CostTable& costs,
                          const ModelPlanOptions& options) {
  ModelPlan result;
  // Without a machine file: one worker with every core. With one: every task on the first
  // device; the other devices stay idle (their workers run nothing).
  const Machine machine =
      options.machine
          ? *options.machine
          : cpu_workers(1, options.workers * options.threads_per_worker, costs.host_links);
  result.threads_per_worker = machine.devices.front().threads;
  result.tasks = replicate_for_samples(
      task_graph_for(graph, costs, machine, model_values_of(options)), options.samples);
  AppendScheduler scheduler(result.tasks, sample_by_sample_order(result.tasks));
  result.plan = scheduler.to_plan(std::vector<int>(result.tasks.tasks.size(), 0), "sequential");
  result.plan.batch = options.samples;
  result.configuration = sequential_text(options);
  return result;
}

ModelPlan plan_with_planner(const Graph& graph, const CostTable& costs,
                            const ModelPlanOptions& options, const std::string& strategy,
                            int64_t clone_trials) {
  const PlannerEntry& planner = find_planner(strategy);
  check_samples(planner, options.samples);
  ModelPlan result;
  // A machine file's devices run their own threads (the executor reads unequal ones per
  // device; equal ones from this count).
  result.threads_per_worker =
      options.machine ? most_threads(*options.machine) : options.threads_per_worker;
  result.family = family_of(strategy);
  TaskGraph per_sample = task_graph_for(
      graph, costs,
      options.machine ? *options.machine
                      : cpu_workers(options.workers, options.threads_per_worker, costs.host_links),
      model_values_of(options));
  ScheduleOptions schedule_options;
  schedule_options.time_limit_seconds = options.time_limit_seconds;
  schedule_options.clone_trials = clone_trials;
  result.configuration = fmt::format(
      "{}, {}", strategy,
      options.machine ? plural(static_cast<int>(options.machine->size()), "device", "devices")
                      : split_text(options.workers, options.threads_per_worker));
  if (planner.family == PlannerFamily::kHeterogeneous) {
    // Through schedule(), so the plan carries its solve time like `cleave schedule`'s.
    result.plan = schedule(per_sample, strategy, schedule_options);
    result.tasks = std::move(per_sample);
    return result;
  }
  PlannedTasks planned = planner.run(per_sample, options.samples, schedule_options);
  result.tasks = std::move(planned.tasks);
  result.plan = std::move(planned.plan);
  return result;
}

ModelPlan plan_data_parallel(const Graph& graph, const CostTable& costs, const Machine& machine,
                             int samples, ModelValues values) {
  ModelPlan result;
  result.family = "data-parallel";
  result.threads_per_worker = machine.devices.front().threads;
  result.tasks = replicate_for_samples(task_graph_for(graph, costs, machine, values), samples);
  const int workers = static_cast<int>(machine.size());
  std::vector<int> worker_of_task(result.tasks.tasks.size());
  for (std::size_t t = 0; t < worker_of_task.size(); ++t)
    worker_of_task[t] = static_cast<int>(result.tasks.tasks[t].batch_begin % workers);
  AppendScheduler scheduler(result.tasks, sample_by_sample_order(result.tasks));
  result.plan = scheduler.to_plan(worker_of_task, "data-parallel");
  result.plan.batch = samples;
  return result;
}

std::string family_of(const std::string& strategy) {
  if (strategy == "sequential" || strategy == "data-parallel" || strategy == "pipeline")
    return strategy;
  return find_planner(strategy).family == PlannerFamily::kTaskParallel ? "task" : "heterogeneous";
}

void mark_candidates(std::vector<PlanCandidate>& rows, const std::string& chosen_configuration) {
  const PlanCandidate* chosen = nullptr;
  for (PlanCandidate& row : rows) {
    row.chosen = row.rejected.empty() && row.configuration == chosen_configuration && !chosen;
    if (row.chosen) chosen = &row;
  }
  if (!chosen) return;
  for (PlanCandidate& row : rows) {
    if (row.chosen || !row.rejected.empty()) continue;
    row.rejected = row.predicted_seconds < chosen->predicted_seconds
                       ? fmt::format("not {:.0f}% faster than {}, which carries less risk",
                                     100 * (1 - kParallelMargin), chosen->configuration)
                       : fmt::format("not faster than {} ({:.3f} ms)", chosen->configuration,
                                     chosen->predicted_seconds * 1e3);
  }
}

ModelPlan plan_auto(const Graph& graph, const CostTable& costs, const ModelPlanOptions& options) {
  Search search{graph, costs, options, {}, {}, kInfinity, {}, {}};
  search.attempt(search.row("sequential", "sequential", sequential_text(options)),
                 [&] { return plan_sequential(graph, costs, options); });
  if (options.machine) {
    search_machine(search, *options.machine);
  } else {
    search_sequential_threads(search, options.workers * options.threads_per_worker);
    search_cpu_splits(search, options.workers * options.threads_per_worker);
  }
  if (!std::isfinite(search.best_seconds)) {
    // The table says why each was set aside: the error is all a user sees of it.
    std::vector<std::string> reasons;
    for (const PlanCandidate& row : search.rows)
      reasons.push_back(fmt::format("{} ({}): {}", row.configuration, row.family, row.rejected));
    throw Error(
        fmt::format("plan: no candidate plan fits the memory of the machine's devices "
                    "({} devices); give more devices or more memory. Candidates: {}",
                    options.machine ? options.machine->size() : 1, fmt::join(reasons, "; ")));
  }
  ModelPlan chosen = std::move(search.best);
  mark_candidates(search.rows, chosen.configuration);
  chosen.alternatives = search.alternatives_to(chosen.configuration);
  chosen.candidates = std::move(search.rows);
  chosen.plan.notes["auto_choice"] = chosen.plan.strategy;
  chosen.plan.notes["family"] = chosen.family;
  chosen.plan.notes["configuration"] = chosen.configuration;
  return chosen;
}

}  // namespace cleave
