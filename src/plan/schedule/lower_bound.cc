// The DiviML lower bound: closed-form bounds, and the module recursion with MILP subproblems.
#include "plan/schedule/lower_bound.h"

#include "plan/schedule/milp_problem.h"

#include <fmt/core.h>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "ir/graph.h"
#include "plan/schedule/milp.h"
#include "plan/schedule/milp_problem.h"
#include "plan/schedule/milp_split.h"
#include "plan/schedule/modules.h"

namespace cleave {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
using Clock = std::chrono::steady_clock;

double fastest_time(const Task& task) {
  double fastest = kInfinity;
  for (double time : task.time) {
    if (std::isfinite(time) && time >= 0) fastest = std::min(fastest, time);
  }
  return fastest;
}

// Longest path with every task at its fastest time (transfers may all be avoided).
double critical_path(const TaskGraph& graph) {
  const auto in_edges = graph.in_edges();
  std::vector<double> finish(graph.tasks.size(), 0.0);
  double longest = 0;
  for (int task : graph.topological_order()) {
    double begin = 0;
    for (int edge : in_edges[task]) begin = std::max(begin, finish[graph.edges[edge].first]);
    finish[task] = begin + fastest_time(graph.tasks[task]);
    longest = std::max(longest, finish[task]);
  }
  return longest;
}

// The smallest C such that the tasks, split fractionally over the devices that can run them,
// keep every device busy for at most C (an LP), within `seconds` (then a weaker closed form).
double work_bound(const TaskGraph& graph, double seconds) {
  const std::size_t tasks = graph.tasks.size();
  const std::size_t devices = graph.machine.size();
  if (tasks == 0 || devices == 0) return 0;
  double fastest_single = 0;
  for (const Task& task : graph.tasks)
    fastest_single = std::max(fastest_single, fastest_time(task));
  if (devices == 1) {
    double total = 0;
    for (const Task& task : graph.tasks) total += task.time[0];
    return total;
  }
  // Every device busy at most C does at least the fastest time of each task in total: the
  // LP's optimum when all devices are alike, and the bound used where the LP (a column per
  // task and device) would be too large to solve within a time limit.
  double fastest_total = 0;
  bool alike = true;
  for (const Task& task : graph.tasks) {
    fastest_total += fastest_time(task);
    for (double time : task.time) alike = alike && time == task.time[0];
  }
  constexpr double kMaxLpColumns = 2e5;
  const double spread = fastest_total / static_cast<double>(devices) * (1 - 1e-12);
  if (alike || static_cast<double>(tasks) * static_cast<double>(devices) > kMaxLpColumns ||
      !(seconds > 0)) {
    return spread;
  }
  // Columns: share[i][d] in [0, 1] where the task can run, then C.
  std::vector<std::vector<int>> share(tasks, std::vector<int>(devices, -1));
  int columns = 0;
  for (std::size_t task = 0; task < tasks; ++task) {
    for (std::size_t device = 0; device < devices; ++device) {
      const double time = graph.tasks[task].time[device];
      if (std::isfinite(time) && time >= 0) share[task][device] = columns++;
    }
  }
  const int makespan = columns++;
  // Rows in units of the longest single task keep the LP well scaled.
  const double unit = fastest_single > 0 ? fastest_single : 1.0;
  CoinPackedMatrix rows(false, 0, 0);
  // Without room reserved up front every appendRow reallocates the whole matrix: quadratic,
  // minutes on a 100,000-task graph.
  const int share_count = columns - 1;
  rows.reserve(static_cast<int>(tasks + devices), 2 * share_count + static_cast<int>(devices));
  std::vector<double> row_lower, row_upper;
  for (std::size_t task = 0; task < tasks; ++task) {
    std::vector<int> index;
    std::vector<double> value;
    for (std::size_t device = 0; device < devices; ++device) {
      if (share[task][device] < 0) continue;
      index.push_back(share[task][device]);
      value.push_back(1.0);
    }
    rows.appendRow(static_cast<int>(index.size()), index.data(), value.data());
    row_lower.push_back(1.0);
    row_upper.push_back(1.0);
  }
  for (std::size_t device = 0; device < devices; ++device) {
    std::vector<int> index{makespan};
    std::vector<double> value{-1.0};
    for (std::size_t task = 0; task < tasks; ++task) {
      if (share[task][device] < 0) continue;
      index.push_back(share[task][device]);
      value.push_back(graph.tasks[task].time[device] / unit);
    }
    rows.appendRow(static_cast<int>(index.size()), index.data(), value.data());
    row_lower.push_back(-COIN_DBL_MAX);
    row_upper.push_back(0.0);
  }
  rows.setDimensions(static_cast<int>(row_lower.size()), columns);
  std::vector<double> lower(columns, 0.0), upper(columns, 1.0), cost(columns, 0.0);
  upper[makespan] = COIN_DBL_MAX;
  cost[makespan] = 1.0;
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(rows, lower.data(), upper.data(), cost.data(), row_lower.data(),
                     row_upper.data());
  // 200 tasks on 1,000 devices took Clp 10 s: past the limit the closed form answers.
  solver.getModelPtr()->setMaximumSeconds(seconds);
  solver.initialSolve();
  if (!solver.isProvenOptimal()) return spread;
  // Clp's tolerances can leave the optimum a hair high; shave it so the bound stays valid.
  return std::max(0.0, solver.getObjValue() * unit * (1 - 1e-9));
}

double closed_form(const TaskGraph& graph, double seconds) {
  return std::max(critical_path(graph), work_bound(graph, seconds));
}

class Recursion {
 public:
  Recursion(const TaskGraph& graph, const ModuleSplit& split, const LowerBoundOptions& options,
            Clock::time_point begin, LowerBoundResult& result)
      : graph_(graph),
        split_(split),
        options_(options),
        begin_(begin),
        result_(result),
        successors_(graph.successors()),
        predecessors_(graph.predecessors()) {}

  // A lower bound for the subgraph induced by `tasks` (sorted).
  double bound(const std::vector<int>& tasks) {
    if (tasks.empty()) return 0;
    // Out of time: 0 is a valid (weak) bound; the caller keeps the whole graph's closed forms.
    if (out_of_time()) return 0;
    const auto known = memo_.find(tasks);
    if (known != memo_.end()) return known->second;
    int first_module = std::numeric_limits<int>::max();
    for (int task : tasks) first_module = std::min(first_module, split_.module_of_task[task]);
    std::vector<int> head, rest;
    for (int task : tasks)
      (split_.module_of_task[task] == first_module ? head : rest).push_back(task);
    double value;
    if (rest.empty()) {
      value = subproblem(head);
    } else {
      std::vector<bool> in_head(graph_.tasks.size(), false), in_rest(graph_.tasks.size(), false);
      for (int task : head) in_head[task] = true;
      for (int task : rest) in_rest[task] = true;
      std::vector<int> producers, consumers;
      for (const auto& [from, to] : graph_.edges) {
        if (in_head[from] && in_rest[to]) {
          producers.push_back(from);
          consumers.push_back(to);
        }
      }
      std::sort(producers.begin(), producers.end());
      producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
      std::sort(consumers.begin(), consumers.end());
      consumers.erase(std::unique(consumers.begin(), consumers.end()), consumers.end());
      // OPT(G) >= OPT(M1) + min over inputs b of OPT(dep(b) in G2), if the last task of M1
      // must feed a channel.
      const std::vector<bool> feeds = closure(producers, in_head, predecessors_);
      double after = 0;
      if (std::all_of(head.begin(), head.end(), [&](int task) { return feeds[task]; })) {
        after = kInfinity;
        for (int consumer : consumers) {
          // Each closure walks the graph: a wide channel must not run on past the limit.
          if (out_of_time()) {
            after = 0;
            break;
          }
          after = std::min(after, bound(members(closure({consumer}, in_rest, successors_))));
        }
      }
      const double first = subproblem(head) + after;
      // OPT(G) >= OPT(G2) + min over outputs a of OPT(pre(a) in M1), if the first task of G2
      // must wait for a channel.
      const std::vector<bool> fed = closure(consumers, in_rest, successors_);
      double before = 0;
      if (std::all_of(rest.begin(), rest.end(), [&](int task) { return fed[task]; })) {
        before = kInfinity;
        for (int producer : producers) {
          if (out_of_time()) {
            before = 0;
            break;
          }
          before =
              std::min(before, subproblem(members(closure({producer}, in_head, predecessors_))));
        }
      }
      const double second = bound(rest) + before;
      value = std::max(first, second);
      if (!out_of_time()) {
        value = std::max(value, closed_form(induced_subgraph(graph_, tasks), seconds_left()));
      }
    }
    memo_[tasks] = value;
    return value;
  }

 private:
  bool out_of_time() {
    if (std::chrono::duration<double>(Clock::now() - begin_).count() < options_.time_limit_seconds)
      return false;
    result_.timed_out = true;
    return true;
  }

  // Tasks of `inside` reachable from `seeds` (seeds included) along `next`.
  std::vector<bool> closure(const std::vector<int>& seeds, const std::vector<bool>& inside,
                            const std::vector<std::vector<int>>& next) const {
    std::vector<bool> seen(graph_.tasks.size(), false);
    std::vector<int> stack;
    for (int seed : seeds) {
      if (inside[seed] && !seen[seed]) {
        seen[seed] = true;
        stack.push_back(seed);
      }
    }
    while (!stack.empty()) {
      const int task = stack.back();
      stack.pop_back();
      for (int other : next[task]) {
        if (inside[other] && !seen[other]) {
          seen[other] = true;
          stack.push_back(other);
        }
      }
    }
    return seen;
  }

  static std::vector<int> members(const std::vector<bool>& flags) {
    std::vector<int> result;
    for (std::size_t task = 0; task < flags.size(); ++task) {
      if (flags[task]) result.push_back(static_cast<int>(task));
    }
    return result;
  }

  double seconds_left() const {
    return options_.time_limit_seconds -
           std::chrono::duration<double>(Clock::now() - begin_).count();
  }

  // OPT of a subgraph from below: the MILP's proven bound, never under the closed forms.
  double subproblem(const std::vector<int>& tasks) {
    const auto known = exact_.find(tasks);
    if (known != exact_.end()) return known->second;
    if (out_of_time()) return 0;
    const TaskGraph sub = induced_subgraph(graph_, tasks);
    double value = closed_form(sub, seconds_left());
    const double left = seconds_left();
    // Building the MILP of a large subgraph (pairwise order variables) takes longer than any
    // time limit allows and cannot be interrupted: such subgraphs keep their closed forms.
    const bool small = tasks.size() <= static_cast<std::size_t>(4 * options_.max_module_tasks) &&
                       milp_detail::program_nonzeros(sub) <= milp_detail::kMaxProgramNonzeros;
    if (options_.use_milp && left > 0 && small) {
      MilpOptions milp = options_.subproblem;
      milp.time_limit_seconds = std::min(milp.time_limit_seconds, left);
      if (milp.verbosity < 2) milp.verbosity = 0;
      const MilpSolution solution = solve_milp(sub, milp);
      ++result_.subproblems;
      if (solution.status == "infeasible") {
        throw Error(
            fmt::format("lower bound: the subgraph starting at \"{}\" ({} tasks) has no "
                        "schedule (memory or links)",
                        graph_.tasks[tasks[0]].name, tasks.size()));
      }
      result_.all_optimal = result_.all_optimal && solution.status == "optimal";
      value = std::max(value, solution.bound);
    } else if (options_.use_milp) {
      result_.all_optimal = false;
    }
    exact_[tasks] = value;
    return value;
  }

  const TaskGraph& graph_;
  const ModuleSplit& split_;
  const LowerBoundOptions& options_;
  Clock::time_point begin_;
  LowerBoundResult& result_;
  std::vector<std::vector<int>> successors_, predecessors_;
  std::map<std::vector<int>, double> memo_;
  std::map<std::vector<int>, double> exact_;
};

}  // namespace

LowerBoundResult makespan_lower_bound(const TaskGraph& graph, const LowerBoundOptions& options) {
  const Clock::time_point begin = Clock::now();
  LowerBoundResult result;
  graph.topological_order();  // rejects cycles
  for (const Task& task : graph.tasks) {
    if (!std::isfinite(fastest_time(task))) {
      throw Error(fmt::format("lower bound: task \"{}\" can run on no device", task.name));
    }
  }
  result.critical_path = critical_path(graph);
  result.work = work_bound(graph, options.time_limit_seconds);
  result.makespan = std::max(result.critical_path, result.work);
  const auto spent = [&] { return std::chrono::duration<double>(Clock::now() - begin).count(); };
  if (options.use_milp && spent() >= options.time_limit_seconds) result.timed_out = true;
  // Splitting a very large graph into modules (cuts, connected components) cannot be
  // interrupted and took 50 s of CPU on 10,000 tasks: such graphs keep the closed forms, and
  // the result says the bound was cut short.
  constexpr std::size_t kMaxRecursionTasks = 4000;
  if (options.use_milp && graph.tasks.size() > kMaxRecursionTasks) result.timed_out = true;
  if (!graph.tasks.empty() && !result.timed_out) {
    const ModuleSplit split =
        choose_modules(graph, options.channels, options.max_module_tasks, options.min_module_tasks);
    result.modules = static_cast<int>(split.modules.size());
    result.channels = split.channels;
    if (options.use_milp) {
      Recursion recursion(graph, split, options, begin, result);
      std::vector<int> all(graph.tasks.size());
      for (std::size_t task = 0; task < all.size(); ++task) all[task] = static_cast<int>(task);
      result.recursive = recursion.bound(all);
      result.makespan = std::max(result.makespan, result.recursive);
    }
  }
  int64_t first = 0, last = 1;
  if (!graph.tasks.empty()) {
    first = graph.tasks.front().batch_begin;
    last = graph.tasks.front().batch_end;
    for (const Task& task : graph.tasks) {
      first = std::min(first, task.batch_begin);
      last = std::max(last, task.batch_end);
    }
  }
  if (last - first > 1) {
    result.objective = "throughput";
    result.batch = last - first;
    if (result.makespan > 0)
      result.throughput = static_cast<double>(result.batch) / result.makespan;
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return result;
}

}  // namespace cleave
