// MILP-SPLIT: module solves per device pair, the DP over the chain, or module-by-module solving.
#include "plan/schedule/milp_split.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/milp_problem.h"
#include "plan/simulator.h"
#include "support/cpu_quota.h"
#include "support/isolated.h"
#include "support/timing.h"

namespace cleave {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
using Clock = std::chrono::steady_clock;
using milp_detail::end_prices;
using milp_detail::EndPrices;
using milp_detail::message_seconds;

std::size_t largest_module(const ModuleSplit& split) {
  std::size_t largest = 0;
  for (const auto& module : split.modules) largest = std::max(largest, module.size());
  return largest;
}

// One module of a single-channel chain as its own task graph: its tasks, plus (after an
// articulation point) a zero-time copy of that point as the first task.
struct ModuleProblem {
  TaskGraph graph;
  std::vector<int> original;  // per local task, its task in the whole graph (-1: the copy)
  int input = -1;             // local task whose device the DP fixes first (-1: none)
  int output = -1;            // local task whose device the DP fixes last (-1: none)
};

ModuleProblem module_problem(const TaskGraph& graph, const ModuleSplit& split, std::size_t t) {
  ModuleProblem problem;
  problem.graph.machine = graph.machine;
  std::vector<int> local(graph.tasks.size(), -1);
  const bool after_articulation = t > 0 && split.joints[t - 1].consumer < 0;
  if (after_articulation) {
    const Task& point = graph.tasks[split.joints[t - 1].producer];
    Task copy;
    copy.name = point.name + "'";
    copy.time.assign(graph.machine.size(), 0.0);
    copy.output_bytes = point.output_bytes;
    problem.graph.tasks.push_back(copy);
    problem.original.push_back(-1);
  }
  for (int task : split.modules[t]) {
    local[task] = static_cast<int>(problem.graph.tasks.size());
    problem.graph.tasks.push_back(graph.tasks[task]);
    problem.original.push_back(task);
  }
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [from, to] = graph.edges[edge];
    if (local[to] < 0) continue;
    int producer = local[from];
    if (producer < 0) {
      if (!after_articulation || from != split.joints[t - 1].producer) continue;
      producer = 0;  // the copy stands for the articulation point
    }
    problem.graph.edges.push_back({producer, local[to]});
    problem.graph.edge_bytes.push_back(graph.bytes_on_edge(edge));
  }
  if (t > 0) problem.input = after_articulation ? 0 : local[split.joints[t - 1].consumer];
  if (t + 1 < split.modules.size()) problem.output = local[split.joints[t].producer];
  return problem;
}

// Seconds to pass the joint from module t to t + 1 when its producer ends on `from` and the
// next module's input is on `to`.
double link_time(const TaskGraph& graph, const ModuleJoint& joint, std::size_t from,
                 std::size_t to) {
  if (joint.consumer < 0) return from == to ? 0.0 : kInfinity;
  double time = 0;
  const EndPrices prices = end_prices(graph);
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    if (graph.edges[edge].first == joint.producer && graph.edges[edge].second == joint.consumer) {
      time = std::max(time, message_seconds(graph, prices, edge, from, to));
    }
  }
  return time;
}

struct Combined {
  std::vector<int> device;
  std::vector<double> start;
  int solves = 0;
  int solver_failures = 0;  // solves whose CBC process died; their warm start stood in
  bool all_optimal = true;
  double predicted = 0;  // the combination's own makespan
};

// `solves_left` counts this solve and those still to come: each gets an equal share of the time
// left, so one hard module cannot spend the whole budget and leave the rest of the chain with
// nothing but warm starts; what a quick solve leaves over goes to the later ones.
MilpOptions solve_options(const MilpSplitOptions& options, Clock::time_point begin,
                          std::size_t solves_left) {
  MilpOptions module = options.module;
  const double left = options.time_limit_seconds - seconds_since(begin);
  const double share = left / static_cast<double>(std::max<std::size_t>(1, solves_left));
  module.time_limit_seconds = std::max(0.05, std::min(module.time_limit_seconds, share));
  // Module solves are short and many: their own progress lines would flood the terminal.
  if (module.verbosity < 2) module.verbosity = 0;
  return module;
}

void report(const MilpSplitOptions& options, Clock::time_point begin, double& last_print,
            const std::string& line) {
  const double elapsed = seconds_since(begin);
  if (options.module.verbosity < 1 || elapsed < 1.0 || elapsed - last_print < 1.0) return;
  last_print = elapsed;
  fmt::print(stderr, "milp-split: {:6.1f} s  {}\n", elapsed, line);
}

std::size_t parallel_solves(const MilpSplitOptions& options) {
  if (options.parallel_solves > 0) return static_cast<std::size_t>(options.parallel_solves);
  return static_cast<std::size_t>(usable_cores());
}

// What a module solve hands back from a worker process: what the DP and the plan read.
nlohmann::json solution_to_json(const MilpSolution& solution) {
  return {{"status", solution.status},
          {"has_solution", solution.has_solution},
          {"device", solution.device},
          {"start", solution.start},
          {"objective", solution.objective},
          {"bound", solution.bound},
          {"solver_failure", solution.solver_failure}};
}

MilpSolution solution_from_json(const nlohmann::json& json) {
  MilpSolution solution;
  solution.status = json.at("status").get<std::string>();
  solution.has_solution = json.at("has_solution").get<bool>();
  solution.device = json.at("device").get<std::vector<int>>();
  solution.start = json.at("start").get<std::vector<double>>();
  solution.objective = json.at("objective").get<double>();
  solution.bound = json.at("bound").get<double>();
  solution.solver_failure = json.at("solver_failure").get<std::string>();
  return solution;
}

// One module solve with its input on `input` and its output on `output`; an end is the
// device count when the module has no such end.
struct ModuleJob {
  std::size_t module, input, output;
};

// Every (module, input device, output device) solve the DP needs; each is independent of the
// others.
std::vector<ModuleJob> module_jobs(const std::vector<ModuleProblem>& problems,
                                   std::size_t devices) {
  const auto wanted = [&](const ModuleProblem& problem, std::size_t u, std::size_t v) {
    if ((problem.input < 0) != (u == devices)) return false;
    if ((problem.output < 0) != (v == devices)) return false;
    return !(problem.input >= 0 && problem.input == problem.output && u != v);
  };
  std::vector<ModuleJob> jobs;
  for (std::size_t t = 0; t < problems.size(); ++t) {
    for (std::size_t u = 0; u <= devices; ++u) {
      for (std::size_t v = 0; v <= devices; ++v) {
        if (wanted(problems[t], u, v)) jobs.push_back({t, u, v});
      }
    }
  }
  return jobs;
}

MilpSolution solve_module_job(const ModuleProblem& problem, const ModuleJob& job,
                              std::size_t devices, const MilpSplitOptions& options,
                              Clock::time_point begin, std::size_t solves_left) {
  MilpRestrictions restrictions;
  restrictions.allowed.assign(problem.graph.tasks.size(), std::vector<bool>(devices, true));
  if (problem.input >= 0) {
    restrictions.allowed[problem.input].assign(devices, false);
    restrictions.allowed[problem.input][job.input] = true;
  }
  if (problem.output >= 0) {
    std::vector<bool>& allowed = restrictions.allowed[problem.output];
    const bool keep = allowed[job.output];
    allowed.assign(devices, false);
    allowed[job.output] = keep;
  }
  return solve_milp(problem.graph, solve_options(options, begin, solves_left), restrictions);
}

// Every job's solution: in worker processes when more than one may run, then one by one
// those no worker brought back.
std::vector<MilpSolution> solve_module_jobs(const TaskGraph& graph, const ModuleSplit& split,
                                            const std::vector<ModuleProblem>& problems,
                                            const std::vector<ModuleJob>& jobs,
                                            const MilpSplitOptions& options,
                                            Clock::time_point begin) {
  const std::size_t devices = graph.machine.size();
  double last_print = 0;
  const auto solve_job = [&](const ModuleJob& job, std::size_t solves_left) {
    return solve_module_job(problems[job.module], job, devices, options, begin, solves_left);
  };
  std::vector<MilpSolution> solutions(jobs.size());
  std::vector<bool> solved(jobs.size(), false);
  const std::size_t workers = std::min(jobs.size(), parallel_solves(options));
  if (workers > 1) {
    // Worker w takes jobs w, w + workers, ...: each a process of its own (which again runs
    // CBC in a child). A solve gets the share of the time it would get one after another
    // (the time left over all solves still to do), so the whole finishes sooner rather than
    // giving each solve longer.
    std::vector<std::function<std::vector<char>()>> works;
    for (std::size_t w = 0; w < workers; ++w) {
      works.push_back([&, w] {
        nlohmann::json out = nlohmann::json::array();
        std::size_t left = (jobs.size() - w + workers - 1) / workers;
        for (std::size_t i = w; i < jobs.size(); i += workers) {
          out.push_back(solution_to_json(solve_job(jobs[i], workers * left--)));
        }
        const std::string text = out.dump();
        return std::vector<char>(text.begin(), text.end());
      });
    }
    const double left = options.time_limit_seconds - seconds_since(begin);
    const auto results = run_isolated_all(works, 1.5 * std::max(0.0, left) + 30.0, nullptr);
    for (std::size_t w = 0; w < workers; ++w) {
      if (!results[w]) continue;  // solved below, one by one
      const nlohmann::json out =
          nlohmann::json::parse(results[w]->begin(), results[w]->end(), nullptr, false);
      if (!out.is_array()) continue;
      std::size_t k = 0;
      for (std::size_t i = w; i < jobs.size() && k < out.size(); i += workers, ++k) {
        solutions[i] = solution_from_json(out[k]);
        solved[i] = true;
      }
    }
    report(options, begin, last_print,
           fmt::format("{} module solves in {} processes", jobs.size(), workers));
  }
  std::size_t solves_left =
      static_cast<std::size_t>(std::count(solved.begin(), solved.end(), false));
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (solved[i]) continue;
    solutions[i] = solve_job(jobs[i], solves_left--);
    if (i + 1 == jobs.size() || jobs[i + 1].module != jobs[i].module) {
      report(options, begin, last_print,
             fmt::format("module {}/{} ({} tasks) solved for its device pairs", jobs[i].module + 1,
                         split.modules.size(), split.modules[jobs[i].module].size()));
    }
  }
  return solutions;
}

// OPT(t, u, v) and its schedule; u or v is the device count when the module has no such end.
struct ModuleEntry {
  double makespan = kInfinity;
  MilpSolution solution;
};
using ModuleTable = std::vector<std::vector<std::vector<ModuleEntry>>>;

// The solutions as the DP's table, counted into `combined`.
ModuleTable module_table(std::vector<MilpSolution>& solutions, const std::vector<ModuleJob>& jobs,
                         std::size_t modules, std::size_t devices, Combined& combined) {
  ModuleTable table(modules);
  for (std::size_t t = 0; t < modules; ++t) {
    table[t].assign(devices + 1, std::vector<ModuleEntry>(devices + 1));
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    MilpSolution& solution = solutions[i];
    ++combined.solves;
    combined.solver_failures += solution.solver_failure.empty() ? 0 : 1;
    if (!solution.has_solution) continue;
    combined.all_optimal = combined.all_optimal && solution.status == "optimal";
    ModuleEntry& entry = table[jobs[i].module][jobs[i].input][jobs[i].output];
    entry.makespan = solution.objective;
    entry.solution = std::move(solution);
  }
  return table;
}

// best[t][v]: earliest finish of modules 0..t with module t's output on v; entry[t][u]:
// earliest start of module t with its input on u; each with the choice that reached it.
struct ChainTimes {
  std::vector<std::vector<double>> best, entry;
  std::vector<std::vector<int>> entry_from, best_input;
};

ChainTimes chain_times(const TaskGraph& graph, const ModuleSplit& split, const ModuleTable& table,
                       std::size_t devices) {
  const std::size_t modules = split.modules.size();
  ChainTimes times;
  times.best.assign(modules, std::vector<double>(devices + 1, kInfinity));
  times.entry.assign(modules, std::vector<double>(devices + 1, kInfinity));
  times.entry_from.assign(modules, std::vector<int>(devices + 1, -1));
  times.best_input.assign(modules, std::vector<int>(devices + 1, -1));
  auto& [best, entry, entry_from, best_input] = times;
  for (std::size_t t = 0; t < modules; ++t) {
    for (std::size_t u = 0; u <= devices; ++u) {
      if (t == 0) {
        entry[t][u] = u == devices ? 0.0 : kInfinity;
        continue;
      }
      if (u == devices) continue;
      for (std::size_t from = 0; from < devices; ++from) {
        const double arrival = best[t - 1][from] + link_time(graph, split.joints[t - 1], from, u);
        if (arrival < entry[t][u]) {
          entry[t][u] = arrival;
          entry_from[t][u] = static_cast<int>(from);
        }
      }
    }
    for (std::size_t u = 0; u <= devices; ++u) {
      if (!std::isfinite(entry[t][u])) continue;
      for (std::size_t v = 0; v <= devices; ++v) {
        const double finish = entry[t][u] + table[t][u][v].makespan;
        if (finish < best[t][v]) {
          best[t][v] = finish;
          best_input[t][v] = static_cast<int>(u);
        }
      }
    }
  }
  return times;
}

// The exact combination of a single-channel chain.
Combined dynamic_program(const TaskGraph& graph, const ModuleSplit& split,
                         const MilpSplitOptions& options, Clock::time_point begin) {
  const std::size_t devices = graph.machine.size();
  const std::size_t modules = split.modules.size();
  Combined combined;
  std::vector<ModuleProblem> problems;
  for (std::size_t t = 0; t < modules; ++t) problems.push_back(module_problem(graph, split, t));
  const std::vector<ModuleJob> jobs = module_jobs(problems, devices);
  std::vector<MilpSolution> solutions =
      solve_module_jobs(graph, split, problems, jobs, options, begin);
  const ModuleTable table = module_table(solutions, jobs, modules, devices, combined);
  const ChainTimes times = chain_times(graph, split, table, devices);
  const double total = times.best[modules - 1][devices];
  if (!std::isfinite(total)) {
    throw Error(
        "milp-split: no combination of module schedules is feasible (memory or links "
        "leave a module's input or output nowhere to run)");
  }
  combined.predicted = total;
  combined.device.assign(graph.tasks.size(), -1);
  combined.start.assign(graph.tasks.size(), 0.0);
  std::size_t output = devices;
  for (std::size_t t = modules; t-- > 0;) {
    const std::size_t input = static_cast<std::size_t>(times.best_input[t][output]);
    const MilpSolution& solution = table[t][input][output].solution;
    const double offset = times.entry[t][input];
    const ModuleProblem& problem = problems[t];
    for (std::size_t local = 0; local < problem.original.size(); ++local) {
      const int task = problem.original[local];
      if (task < 0) continue;
      combined.device[task] = solution.device[local];
      combined.start[task] = offset + solution.start[local];
    }
    if (t > 0) output = static_cast<std::size_t>(times.entry_from[t][input]);
  }
  return combined;
}

// Module after module, each solved given what the earlier ones left.
Combined one_after_another(const TaskGraph& graph, const ModuleSplit& split,
                           const MilpSplitOptions& options, Clock::time_point begin) {
  const std::size_t devices = graph.machine.size();
  const auto in_edges = graph.in_edges();
  Combined combined;
  combined.device.assign(graph.tasks.size(), -1);
  combined.start.assign(graph.tasks.size(), 0.0);
  std::vector<double> finish(graph.tasks.size(), 0.0);
  std::vector<double> device_free(devices, 0.0);
  const EndPrices prices = end_prices(graph);
  double last_print = 0;
  for (std::size_t t = 0; t < split.modules.size(); ++t) {
    const std::vector<int>& tasks = split.modules[t];
    const TaskGraph sub = induced_subgraph(graph, tasks);
    MilpRestrictions restrictions;
    restrictions.release.assign(tasks.size(), std::vector<double>(devices, 0.0));
    for (std::size_t local = 0; local < tasks.size(); ++local) {
      for (int edge : in_edges[tasks[local]]) {
        const int producer = graph.edges[edge].first;
        if (split.module_of_task[producer] == static_cast<int>(t)) continue;
        for (std::size_t device = 0; device < devices; ++device) {
          double& release = restrictions.release[local][device];
          release = std::max(
              release, finish[producer] +
                           message_seconds(graph, prices, edge, combined.device[producer], device));
        }
      }
    }
    restrictions.device_available = device_free;
    restrictions.memory_used = weight_bytes_per_worker(graph, combined.device);
    const MilpSolution solution =
        solve_milp(sub, solve_options(options, begin, split.modules.size() - t), restrictions);
    ++combined.solves;
    combined.solver_failures += solution.solver_failure.empty() ? 0 : 1;
    if (!solution.has_solution) {
      throw Error(fmt::format(
          "milp-split: module {} of {} ({} tasks, first \"{}\") has no "
          "schedule: {}",
          t + 1, split.modules.size(), tasks.size(), graph.tasks[tasks[0]].name,
          solution.status == "infeasible" ? "memory or links leave a task nowhere to run"
                                          : "none found within the time limit"));
    }
    combined.all_optimal = combined.all_optimal && solution.status == "optimal";
    for (std::size_t local = 0; local < tasks.size(); ++local) {
      const int task = tasks[local];
      const int device = solution.device[local];
      combined.device[task] = device;
      combined.start[task] = solution.start[local];
      finish[task] = solution.start[local] + graph.tasks[task].time[device];
      device_free[device] = std::max(device_free[device], finish[task]);
      combined.predicted = std::max(combined.predicted, finish[task]);
    }
    report(options, begin, last_print,
           fmt::format("module {}/{} ({} tasks) placed, makespan so far {:.6g} s", t + 1,
                       split.modules.size(), tasks.size(), combined.predicted));
  }
  return combined;
}

}  // namespace

ModuleSplit choose_modules(const TaskGraph& graph, int channels, int max_module_tasks,
                           int min_module_tasks) {
  if (channels < 0) {
    throw Error(
        fmt::format("milp-split: channels must be 0 (automatic) or positive, got {}", channels));
  }
  if (channels > 0) return multi_channel_modules(graph, channels, min_module_tasks);
  ModuleSplit chosen = single_channel_modules(graph);
  const std::size_t limit = static_cast<std::size_t>(std::max(1, max_module_tasks));
  for (int candidate = 2; candidate <= 4 && largest_module(chosen) > limit; ++candidate) {
    ModuleSplit split = multi_channel_modules(graph, candidate, min_module_tasks);
    if (largest_module(split) < largest_module(chosen)) chosen = std::move(split);
  }
  return chosen;
}

Plan plan_milp_split(const TaskGraph& graph, const MilpSplitOptions& options) {
  const Clock::time_point begin = Clock::now();
  if (!(options.time_limit_seconds > 0)) {
    throw Error(
        fmt::format("milp-split: time limit must be positive, got {}", options.time_limit_seconds));
  }
  graph.topological_order();  // rejects cycles before anything else
  const ModuleSplit split =
      choose_modules(graph, options.channels, options.max_module_tasks, options.min_module_tasks);
  if (split.modules.size() <= 1) {
    MilpOptions whole = options.module;
    whole.time_limit_seconds = std::min(whole.time_limit_seconds, options.time_limit_seconds);
    Plan plan = plan_milp(graph, whole);
    plan.strategy = "milp-split";
    plan.notes["modules"] = split.modules.size();
    plan.notes["channels"] = split.channels;
    plan.notes["single_channel"] = false;
    plan.notes["module_solves"] = 1;
    return plan;
  }
  Combined combined;
  bool memory_fallback = false;
  if (split.single_channel) {
    combined = dynamic_program(graph, split, options, begin);
    if (over_memory_worker(graph, combined.device) >= 0) {
      // Each module was solved with the whole memory; together they do not fit.
      const int solves = combined.solves;
      const int failures = combined.solver_failures;
      combined = one_after_another(graph, split, options, begin);
      combined.solves += solves;
      combined.solver_failures += failures;
      memory_fallback = true;
    }
  } else {
    combined = one_after_another(graph, split, options, begin);
  }
  Plan plan = plan_from_schedule(graph, combined.device, combined.start, "milp-split");
  const bool exact = split.single_channel && !memory_fallback && combined.all_optimal;
  // Combining modules one after another (multi-channel splits, the memory fallback) or module
  // solves stopped at their time limit can lose to a plain list schedule: HEFT costs
  // milliseconds, so the split never returns anything worse than it, and says so.
  if (!exact) {
    Plan heft = plan_heft(graph);
    if (heft.makespan < plan.makespan) {
      const double split_makespan = plan.makespan;
      plan = std::move(heft);
      plan.strategy = "milp-split";
      set_objective_from_graph(plan, graph);
      plan.notes = nlohmann::json::object();
      plan.notes["fallback"] = "heft";
      plan.notes["split_makespan"] = split_makespan;
      combined.predicted = plan.makespan;
    }
  }
  plan.notes["status"] = exact ? "optimal" : combined.all_optimal ? "heuristic" : "time_limit";
  plan.notes["modules"] = split.modules.size();
  plan.notes["channels"] = split.channels;
  plan.notes["single_channel"] = split.single_channel;
  plan.notes["largest_module"] = largest_module(split);
  plan.notes["module_solves"] = combined.solves;
  plan.notes["solver_failures"] = combined.solver_failures;
  plan.notes["predicted_makespan"] = combined.predicted;
  plan.notes["planner_makespan"] = combined.predicted;
  plan.notes["memory_fallback"] = memory_fallback;
  plan.notes["solve_seconds"] = seconds_since(begin);
  if (plan.objective == "throughput" && plan.makespan > 0) {
    plan.notes["throughput"] = static_cast<double>(plan.batch) / plan.makespan;
  }
  return plan;
}

}  // namespace cleave
