// The DiviML MILP (conditions 1-7) built as a CBC model, warm-started, solved and polished.
//
// Variables (times in scaled units, see the end): x[i][d] binary per task i and device d it may
// run on; s_i, one start time per task (only one x[i][.] is 1, so one start serves every
// device), bounded below by the task's head; C, the makespan, bounded below by the heads-and-
// tails bound; o_ab binary per task pair the DAG leaves unordered and that can share a device;
// with a binding memory limit, y[g][d] in [0, 1] per weight group and device; with
// supported_shares, b[g][d][l] binary per sliced node, device and supported batch size.
// Writing dur_i = sum_d t_id x[i][d] (the duration on the chosen device):
//
// What the formulation is, against the paper's (section IV-A):
// - Condition 1: sum_d x[i][d] = 1 for every task. Devices where the task cannot run (infinite
//   time, a MilpRestrictions::allowed of false, weights larger than the device's free memory,
//   or head + time + tail beyond the horizon, which no optimum can use) get no variable.
// - Condition 2: C >= s_i + dur_i + tail_i for every task, where tail_i is the fastest chain of
//   work after it (valid, and it tightens the relaxation); also each device's total busy time
//   sum_i t_id x[i][d] <= C.
// - Condition 3: for every edge (i, j): s_j >= s_i + dur_i, and for every device pair (u, v),
//   u != v, with a finite positive transfer time c: s_j >= s_i + dur_i + c * (x[i][u] + x[j][v]
//   - 1), the paper's linearisation; pairs without a link get x[i][u] + x[j][v] <= 1 instead.
// - Conditions 4 and 5 (batching): cleave represents a batch as slice tasks
//   (batch_task_graph: one task per node and slice, times linear in the slice size), so the
//   paper's items are slices and condition 4 is condition 1 on them. Because slice times are
//   linear, fusing the slices of a node on one device into a single launch (the paper's one
//   start per node and device) can never shorten a schedule, and the executor runs slices one by
//   one anyway, so slices keep their own start times. Condition 5 (a device's share of a node
//   must be a supported batch size) is available as MilpOptions::supported_shares, linearised
//   exactly without big-M: share = sum of size * x = sum of l * b[l] over supported sizes l,
//   sum of b[l] <= 1.
// - Condition 6: weight bytes per device within memory (in MB, rows only for devices whose
//   possible demand exceeds their memory), with slices of one node (one weight_group) counted
//   once through a residency variable y >= x (this is the memory model validate_plan checks;
//   activations are not counted there either).
// - Condition 7: no overlap on a device, big-M, but only for task pairs that the transitive
//   closure (Reachability) leaves unordered (the paper's reduction): ordered pairs are kept
//   apart by condition 3 already. One order variable per pair serves all devices; per shared
//   device d: s_b >= s_a + t_ad - M1 (3 - o_ab - x[a][d] - x[b][d]) and s_a >= s_b + t_bd -
//   M2 (2 + o_ab - x[a][d] - x[b][d]). Pairs of zero-length tasks never conflict and get none.
//   Each M is the largest its left side can be within the horizon (the warm start's makespan),
//   from per-task heads and tails, instead of one global M.
// - Section VI: optional orderings between interchangeable devices (same machine properties,
//   symmetric links, equal task times and restrictions): sum of the chosen metric (tasks, busy
//   time or batch items) on one device >= that on the next of its class.
// - MilpRestrictions (MILP-SPLIT modules, lower-bound subgraphs): s_i >= sum_d ready_id x[i][d]
//   for release times and devices busy until some time; memory already used elsewhere is taken
//   off each device's memory.
// The objective is min C; for batched graphs throughput is batch / C. Times are scaled so the
// horizon is 100 units (the big M), far above CBC's absolute tolerances.
//
// Solving: an earliest-finish list schedule in upward-rank order (renamed within device classes
// to obey the symmetry order) is the horizon and CBC's MIP start, so a solve always has an
// incumbent; without one the horizon is the sum of every task's and edge's longest time. CBC
// runs with the time limit (wall clock; an event handler also stops it, and prints progress
// once a second after the first second) and the relative gap of MilpOptions. The incumbent is
// polished: integer choices fixed, the LP solved again, then every task moved as early as its
// device order and inputs allow; the plan's times come from the simulator on that assignment and
// order. One task, or a graph whose tasks all take no time, is solved without CBC; with less
// than kLeastSolverSeconds left after the warm start, that warm start is the answer.
#include "plan/milp.h"

#include <fmt/core.h>
#include <coin/CbcEventHandler.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "ir/graph.h"
#include "plan/isolated.h"
#include "plan/list_schedule.h"
#include "plan/modules.h"
#include "plan/simulator.h"

namespace cleave {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Times are scaled so that the horizon (the big M) is this many units: far above CBC's
// absolute tolerances, far below where they become relative noise.
constexpr double kScaledHorizon = 100.0;
// Below this many seconds left, the warm start is returned without calling CBC.
constexpr double kLeastSolverSeconds = 0.25;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The problem after applying the restrictions: who may run where, and from when.
struct Problem {
  const TaskGraph* graph = nullptr;
  std::size_t tasks = 0;
  std::size_t devices = 0;
  std::vector<std::vector<bool>> allowed;
  std::vector<std::vector<double>> ready;  // max(release, device available)
  std::vector<double> memory_left;
  std::vector<int> memory_key;  // weight-sharing key per task
  std::vector<double> key_bytes;
  std::vector<int> topological_position;
};

Problem make_problem(const TaskGraph& graph, const MilpRestrictions& restrictions) {
  Problem problem;
  problem.graph = &graph;
  problem.tasks = graph.tasks.size();
  problem.devices = graph.machine.size();
  const auto check_size = [&](std::size_t size, std::size_t expected, const char* what) {
    if (size != 0 && size != expected) {
      throw Error(fmt::format("milp: restriction \"{}\" has {} entries, expected {}", what, size,
                              expected));
    }
  };
  check_size(restrictions.allowed.size(), problem.tasks, "allowed");
  check_size(restrictions.release.size(), problem.tasks, "release");
  check_size(restrictions.device_available.size(), problem.devices, "device_available");
  check_size(restrictions.memory_used.size(), problem.devices, "memory_used");
  problem.allowed.assign(problem.tasks, std::vector<bool>(problem.devices, false));
  problem.ready.assign(problem.tasks, std::vector<double>(problem.devices, 0.0));
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    const Task& info = graph.tasks[task];
    if (info.time.size() != problem.devices) {
      throw Error(fmt::format("milp: task \"{}\" has {} times for {} devices", info.name,
                              info.time.size(), problem.devices));
    }
    for (std::size_t device = 0; device < problem.devices; ++device) {
      bool allowed = std::isfinite(info.time[device]) && info.time[device] >= 0;
      if (!restrictions.allowed.empty()) {
        check_size(restrictions.allowed[task].size(), problem.devices, "allowed[task]");
        allowed = allowed && restrictions.allowed[task][device];
      }
      double ready = 0;
      if (!restrictions.release.empty()) {
        check_size(restrictions.release[task].size(), problem.devices, "release[task]");
        ready = restrictions.release[task][device];
      }
      if (!restrictions.device_available.empty()) {
        ready = std::max(ready, restrictions.device_available[device]);
      }
      if (!std::isfinite(ready)) allowed = false;
      problem.allowed[task][device] = allowed;
      problem.ready[task][device] = allowed ? ready : 0.0;
    }
  }
  problem.memory_left.resize(problem.devices);
  for (std::size_t device = 0; device < problem.devices; ++device) {
    const double used = restrictions.memory_used.empty() ? 0.0 : restrictions.memory_used[device];
    problem.memory_left[device] = graph.machine.devices[device].memory_bytes - used;
  }
  std::map<int32_t, int> key_of_group;
  problem.memory_key.resize(problem.tasks);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    const Task& info = graph.tasks[task];
    int key;
    if (info.weight_group >= 0) {
      const auto [it, added] =
          key_of_group.emplace(info.weight_group, static_cast<int>(problem.key_bytes.size()));
      if (added) problem.key_bytes.push_back(0.0);
      key = it->second;
    } else {
      key = static_cast<int>(problem.key_bytes.size());
      problem.key_bytes.push_back(0.0);
    }
    problem.memory_key[task] = key;
    problem.key_bytes[key] = std::max(problem.key_bytes[key], info.weight_bytes);
  }
  // A key too big for a device keeps all its tasks off it.
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (problem.key_bytes[problem.memory_key[task]] > problem.memory_left[device]) {
        problem.allowed[task][device] = false;
      }
    }
  }
  const std::vector<int> order = graph.topological_order();
  problem.topological_position.resize(problem.tasks);
  for (std::size_t i = 0; i < order.size(); ++i) {
    problem.topological_position[order[i]] = static_cast<int>(i);
  }
  return problem;
}

// What a CBC run left behind, as it crosses from the solver's process to cleave's.
struct CbcOutcome {
  bool infeasible = false;
  bool proven_optimal = false;
  bool has_best = false;
  double objective = 0;  // scaled units
  double bound = 0;
  std::vector<double> best;  // per column, when has_best
};

CbcOutcome run_cbc(CbcModel& model, const MilpOptions& options, double seconds, int columns) {
  CbcSolverUsefulData solver_data;
  solver_data.noPrinting_ = options.verbosity < 2;
  solver_data.useSignalHandler_ = false;
  CbcMain0(model, solver_data);
  const std::vector<std::string> argument_text = {
      "cleave",
      "-log",
      options.verbosity >= 2 ? "1" : "0",
      "-timeMode",
      "elapsed",
      "-seconds",
      fmt::format("{}", seconds),
      "-ratioGap",
      fmt::format("{}", std::max(0.0, options.relative_gap)),
      "-allowableGap",
      "1e-9",
      "-threads",
      fmt::format("{}", std::max(1, options.threads)),
      "-solve",
      "-quit"};
  std::vector<const char*> arguments;
  for (const std::string& text : argument_text) arguments.push_back(text.c_str());
  CbcMain1(
      static_cast<int>(arguments.size()), arguments.data(), model, [](CbcModel*, int) { return 0; },
      solver_data);
  CbcOutcome outcome;
  outcome.infeasible = model.isProvenInfeasible();
  outcome.proven_optimal = model.isProvenOptimal();
  const double* best = model.bestSolution();
  outcome.has_best = best != nullptr;
  if (best != nullptr) {
    outcome.best.assign(best, best + columns);
    outcome.objective = model.getObjValue();
  }
  outcome.bound = model.getBestPossibleObjValue();
  return outcome;
}

std::vector<char> encode(const CbcOutcome& outcome) {
  const double header[] = {outcome.infeasible ? 1.0 : 0.0, outcome.proven_optimal ? 1.0 : 0.0,
                           outcome.has_best ? 1.0 : 0.0, outcome.objective, outcome.bound};
  std::vector<char> bytes(sizeof header + outcome.best.size() * sizeof(double));
  std::memcpy(bytes.data(), header, sizeof header);
  if (!outcome.best.empty()) {
    std::memcpy(bytes.data() + sizeof header, outcome.best.data(),
                outcome.best.size() * sizeof(double));
  }
  return bytes;
}

CbcOutcome decode(const std::vector<char>& bytes) {
  double header[5];
  if (bytes.size() < sizeof header || (bytes.size() - sizeof header) % sizeof(double) != 0) {
    throw Error(
        fmt::format("milp: the solver process returned {} bytes, not an outcome", bytes.size()));
  }
  std::memcpy(header, bytes.data(), sizeof header);
  CbcOutcome outcome;
  outcome.infeasible = header[0] != 0;
  outcome.proven_optimal = header[1] != 0;
  outcome.has_best = header[2] != 0;
  outcome.objective = header[3];
  outcome.bound = header[4];
  outcome.best.resize((bytes.size() - sizeof header) / sizeof(double));
  if (!outcome.best.empty()) {
    std::memcpy(outcome.best.data(), bytes.data() + sizeof header,
                outcome.best.size() * sizeof(double));
  }
  return outcome;
}

struct Schedule {
  std::vector<int> device;
  std::vector<double> start;
  double makespan = 0;
};

// Earliest-finish-time list scheduling in upward-rank order, appending to each device (the
// order the program's start times then reproduce). Respects every restriction; nullopt when
// memory or links leave some task nowhere to go.
std::optional<Schedule> list_schedule(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  const auto in_edges = graph.in_edges();
  Schedule schedule;
  schedule.device.assign(problem.tasks, -1);
  schedule.start.assign(problem.tasks, 0.0);
  std::vector<double> finish(problem.tasks, 0.0);
  std::vector<double> device_free(problem.devices, 0.0);
  std::vector<double> memory_used(problem.devices, 0.0);
  std::vector<std::vector<int>> key_holders(problem.devices,
                                            std::vector<int>(problem.key_bytes.size(), 0));
  for (int task : upward_rank_order(graph)) {
    int best = -1;
    double best_start = 0;
    double best_finish = kInfinity;
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      const int key = problem.memory_key[task];
      const double added = key_holders[device][key] > 0 ? 0.0 : problem.key_bytes[key];
      if (memory_used[device] + added > problem.memory_left[device]) continue;
      double start = std::max(device_free[device], problem.ready[task][device]);
      for (int edge : in_edges[task]) {
        const int producer = graph.edges[edge].first;
        start = std::max(
            start, finish[producer] + graph.edge_time(edge, schedule.device[producer], device));
      }
      const double end = start + graph.tasks[task].time[device];
      if (end < best_finish) {
        best = static_cast<int>(device);
        best_start = start;
        best_finish = end;
      }
    }
    if (best < 0) return std::nullopt;
    const int key = problem.memory_key[task];
    if (key_holders[best][key]++ == 0) memory_used[best] += problem.key_bytes[key];
    schedule.device[task] = best;
    schedule.start[task] = best_start;
    finish[task] = best_finish;
    device_free[best] = best_finish;
    schedule.makespan = std::max(schedule.makespan, best_finish);
  }
  return schedule;
}

// An upper bound on the makespan of some optimal schedule when no warm start exists: in a
// schedule without needless idle time, the chain of waits behind the last task visits every
// task and edge at most once after the latest ready time.
double trivial_horizon(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  double horizon = 0;
  double latest_ready = 0;
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    double longest = 0;
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      longest = std::max(longest, graph.tasks[task].time[device]);
      latest_ready = std::max(latest_ready, problem.ready[task][device]);
    }
    horizon += longest;
  }
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    double longest = 0;
    for (std::size_t from = 0; from < problem.devices; ++from) {
      for (std::size_t to = 0; to < problem.devices; ++to) {
        const double time = graph.edge_time(edge, from, to);
        if (std::isfinite(time)) longest = std::max(longest, time);
      }
    }
    horizon += longest;
  }
  return horizon + latest_ready;
}

// Per task, the earliest it can start (its fastest predecessors, no transfers, its earliest
// ready time) and the least work that must follow it (fastest times along the longest path
// after it): bounds that tighten the LP relaxation at no risk.
struct HeadsAndTails {
  std::vector<double> head;
  std::vector<double> tail;
  std::vector<double> fastest;
  double makespan = 0;  // max of head + fastest + tail
};

HeadsAndTails heads_and_tails(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  HeadsAndTails bounds;
  bounds.head.assign(problem.tasks, 0.0);
  bounds.tail.assign(problem.tasks, 0.0);
  bounds.fastest.assign(problem.tasks, kInfinity);
  std::vector<double> earliest_ready(problem.tasks, kInfinity);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      bounds.fastest[task] = std::min(bounds.fastest[task], graph.tasks[task].time[device]);
      earliest_ready[task] = std::min(earliest_ready[task], problem.ready[task][device]);
    }
    if (!std::isfinite(bounds.fastest[task])) return HeadsAndTails{};  // infeasible anyway
  }
  const std::vector<int> order = graph.topological_order();
  const auto in_edges = graph.in_edges();
  const auto out_edges = graph.out_edges();
  for (int task : order) {
    double head = earliest_ready[task];
    for (int edge : in_edges[task]) {
      const int producer = graph.edges[edge].first;
      head = std::max(head, bounds.head[producer] + bounds.fastest[producer]);
    }
    bounds.head[task] = head;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    double tail = 0;
    for (int edge : out_edges[*it]) {
      const int consumer = graph.edges[edge].second;
      tail = std::max(tail, bounds.fastest[consumer] + bounds.tail[consumer]);
    }
    bounds.tail[*it] = tail;
  }
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    bounds.makespan =
        std::max(bounds.makespan, bounds.head[task] + bounds.fastest[task] + bounds.tail[task]);
  }
  return bounds;
}

bool links_symmetric(const Machine& machine, std::size_t a, std::size_t b) {
  // Transfer times at a few sizes capture both latency and bandwidth.
  for (double bytes : {0.0, 1.0, 1e9}) {
    if (machine.transfer_time(a, b, bytes) != machine.transfer_time(b, a, bytes)) return false;
    for (std::size_t other = 0; other < machine.size(); ++other) {
      if (other == a || other == b) continue;
      if (machine.transfer_time(a, other, bytes) != machine.transfer_time(b, other, bytes) ||
          machine.transfer_time(other, a, bytes) != machine.transfer_time(other, b, bytes)) {
        return false;
      }
    }
  }
  return true;
}

// Devices that swapping leaves the whole problem unchanged; classes of two or more.
std::vector<std::vector<int>> interchangeable_classes(const Problem& problem) {
  const TaskGraph& graph = *problem.graph;
  const auto swappable = [&](std::size_t a, std::size_t b) {
    if (!graph.machine.identical(a, b) || !links_symmetric(graph.machine, a, b)) return false;
    if (problem.memory_left[a] != problem.memory_left[b]) return false;
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      if (problem.allowed[task][a] != problem.allowed[task][b]) return false;
      if (!problem.allowed[task][a]) continue;
      if (graph.tasks[task].time[a] != graph.tasks[task].time[b] ||
          problem.ready[task][a] != problem.ready[task][b]) {
        return false;
      }
    }
    return true;
  };
  std::vector<std::vector<int>> classes;
  std::vector<bool> placed(problem.devices, false);
  for (std::size_t first = 0; first < problem.devices; ++first) {
    if (placed[first]) continue;
    std::vector<int> members{static_cast<int>(first)};
    for (std::size_t other = first + 1; other < problem.devices; ++other) {
      if (!placed[other] && swappable(first, other)) {
        members.push_back(static_cast<int>(other));
        placed[other] = true;
      }
    }
    if (members.size() > 1) classes.push_back(std::move(members));
  }
  return classes;
}

double task_items(const Task& task) {
  return static_cast<double>(std::max<int64_t>(1, task.batch_end - task.batch_begin));
}

double symmetry_metric(SymmetryBreaking symmetry, const Task& task, std::size_t device) {
  switch (symmetry) {
    case SymmetryBreaking::kTaskCount:
      return 1.0;
    case SymmetryBreaking::kUtilisation:
      return task.time[device];
    case SymmetryBreaking::kBatchItems:
      return task_items(task);
    case SymmetryBreaking::kNone:
      break;
  }
  return 0.0;
}

// Renames devices inside each class so the warm start obeys the symmetry-breaking order
// (metric non-increasing along the class).
void order_by_symmetry(Schedule& schedule, const Problem& problem,
                       const std::vector<std::vector<int>>& classes, SymmetryBreaking symmetry) {
  for (const auto& members : classes) {
    std::vector<double> metric(problem.devices, 0.0);
    for (std::size_t task = 0; task < problem.tasks; ++task) {
      const int device = schedule.device[task];
      metric[device] += symmetry_metric(symmetry, problem.graph->tasks[task], device);
    }
    std::vector<int> by_metric = members;
    std::stable_sort(by_metric.begin(), by_metric.end(),
                     [&](int a, int b) { return metric[a] > metric[b]; });
    std::vector<int> rename(problem.devices);
    std::iota(rename.begin(), rename.end(), 0);
    for (std::size_t k = 0; k < members.size(); ++k) rename[by_metric[k]] = members[k];
    for (int& device : schedule.device) device = rename[device];
  }
}

// Column-and-row collector for the program.
class ProgramBuilder {
 public:
  int add_column(double lower, double upper, double cost, bool integer) {
    lower_.push_back(lower);
    upper_.push_back(upper);
    cost_.push_back(cost);
    integer_.push_back(integer);
    return static_cast<int>(lower_.size()) - 1;
  }
  void add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
    std::map<int, double> merged;
    for (const auto& [column, value] : terms) merged[column] += value;
    std::vector<int> columns;
    std::vector<double> values;
    for (const auto& [column, value] : merged) {
      if (value == 0) continue;
      columns.push_back(column);
      values.push_back(value);
    }
    rows_.appendRow(static_cast<int>(columns.size()), columns.data(), values.data());
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
  }
  int columns() const { return static_cast<int>(lower_.size()); }
  /// The name the loaded solver knows column `column` by.
  static std::string solver_name(int column) { return fmt::format("C{:07d}", column); }
  int rows() const { return static_cast<int>(row_lower_.size()); }
  bool integer(int column) const { return integer_[column]; }

  void load(OsiClpSolverInterface& solver) {
    rows_.setDimensions(rows(), columns());
    CoinPackedMatrix by_column;
    by_column.setExtraGap(0.0);
    by_column.setExtraMajor(0.0);
    by_column.reverseOrderedCopyOf(rows_);
    solver.loadProblem(by_column, lower_.data(), upper_.data(), cost_.data(), row_lower_.data(),
                       row_upper_.data());
    // Column names stay the solver's defaults ("C0000012"): with names set, CBC 2.10's
    // post-processing crashes (null pointer in ClpPresolve), so the MIP start uses those.
    for (int column = 0; column < columns(); ++column) {
      if (integer_[column]) solver.setInteger(column);
    }
  }

 private:
  std::vector<double> lower_, upper_, cost_;
  std::vector<bool> integer_;
  CoinPackedMatrix rows_{false, 0, 0};
  std::vector<double> row_lower_, row_upper_;
};

// Progress lines on stderr for long solves, and a hard stop at the time limit (CBC checks its
// own limit only between some phases).
class ProgressReporter : public CbcEventHandler {
 public:
  ProgressReporter(Clock::time_point start, double scale, double time_limit, bool print)
      : start_(start), scale_(scale), time_limit_(time_limit), print_(print) {}
  ProgressReporter(const ProgressReporter& other) = default;

  CbcAction event(CbcEvent event) override {
    if (event != node && event != solution && event != heuristicSolution && event != treeStatus) {
      return noAction;
    }
    const double elapsed = seconds_since(start_);
    if (print_ && elapsed >= 1.0 && elapsed - last_print_ >= 1.0) {
      last_print_ = elapsed;
      const bool has_incumbent = model_->bestSolution() != nullptr;
      const double incumbent = model_->getObjValue() * scale_;
      const double bound = model_->getBestPossibleObjValue() * scale_;
      std::string line = fmt::format("milp: {:6.1f} s  nodes {:>8}  bound {:.6g} s", elapsed,
                                     model_->getNodeCount(), bound);
      if (has_incumbent) {
        line += fmt::format("  incumbent {:.6g} s  gap {:.2f}%", incumbent,
                            incumbent > 0 ? 100.0 * (incumbent - bound) / incumbent : 0.0);
      } else {
        line += "  no incumbent yet";
      }
      fmt::print(stderr, "{}\n", line);
    }
    if (elapsed > time_limit_ + 0.5) return stop;
    return noAction;
  }
  CbcEventHandler* clone() const override { return new ProgressReporter(*this); }

 private:
  Clock::time_point start_;
  double scale_;
  double time_limit_;
  bool print_;
  double last_print_ = 0;
};

// Orders tasks on one device from their start times: ties (within rounding) put zero-length
// tasks first, then topological position, which reproduces the solver's order.
std::vector<std::vector<int>> orders_from_starts(const TaskGraph& graph,
                                                 const std::vector<int>& device,
                                                 const std::vector<double>& start) {
  const std::size_t tasks = graph.tasks.size();
  const std::vector<int> topological = graph.topological_order();
  std::vector<int> position(tasks);
  for (std::size_t i = 0; i < topological.size(); ++i)
    position[topological[i]] = static_cast<int>(i);
  double horizon = 0;
  for (std::size_t task = 0; task < tasks; ++task) {
    horizon = std::max(horizon, start[task] + graph.tasks[task].time[device[task]]);
  }
  const double tolerance = 1e-9 * std::max(horizon, 1e-300);
  std::vector<std::vector<int>> order(graph.machine.size());
  for (std::size_t task = 0; task < tasks; ++task)
    order[device[task]].push_back(static_cast<int>(task));
  for (auto& list : order) {
    std::sort(list.begin(), list.end(), [&](int a, int b) {
      if (start[a] != start[b]) return start[a] < start[b];
      return position[a] < position[b];
    });
    // Within runs of (nearly) equal starts, zero-length tasks go first.
    for (std::size_t begin = 0; begin < list.size();) {
      std::size_t end = begin + 1;
      while (end < list.size() && start[list[end]] - start[list[begin]] <= tolerance) ++end;
      std::stable_sort(list.begin() + begin, list.begin() + end, [&](int a, int b) {
        const bool a_zero = graph.tasks[a].time[device[a]] <= 0;
        const bool b_zero = graph.tasks[b].time[device[b]] <= 0;
        if (a_zero != b_zero) return a_zero;
        return position[a] < position[b];
      });
      begin = end;
    }
  }
  return order;
}

// The same assignment and per-device orders with every task as early as its inputs, its
// device and its ready time allow (the solver leaves slack on tasks off the critical path).
// Returns false, changing nothing, if the orders contradict the edges.
bool left_justify(const Problem& problem, const std::vector<int>& device,
                  std::vector<double>& start) {
  const TaskGraph& graph = *problem.graph;
  const auto order = orders_from_starts(graph, device, start);
  const auto in_edges = graph.in_edges();
  const auto successors = graph.successors();
  std::vector<int> next_on_device(problem.tasks, -1);
  std::vector<int> previous_on_device(problem.tasks, -1);
  std::vector<int> waiting(problem.tasks, 0);
  for (const auto& list : order) {
    for (std::size_t i = 1; i < list.size(); ++i) {
      next_on_device[list[i - 1]] = list[i];
      previous_on_device[list[i]] = list[i - 1];
    }
  }
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    waiting[task] =
        static_cast<int>(in_edges[task].size()) + (previous_on_device[task] >= 0 ? 1 : 0);
  }
  std::vector<int> ready;
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    if (waiting[task] == 0) ready.push_back(static_cast<int>(task));
  }
  std::vector<double> justified(problem.tasks, 0.0);
  std::vector<double> finish(problem.tasks, 0.0);
  std::size_t done = 0;
  while (!ready.empty()) {
    const int task = ready.back();
    ready.pop_back();
    ++done;
    const int here = device[task];
    double begin = problem.ready[task][here];
    if (previous_on_device[task] >= 0) begin = std::max(begin, finish[previous_on_device[task]]);
    for (int edge : in_edges[task]) {
      const int producer = graph.edges[edge].first;
      begin = std::max(begin, finish[producer] + graph.edge_time(edge, device[producer], here));
    }
    justified[task] = begin;
    finish[task] = begin + graph.tasks[task].time[here];
    for (int next : successors[task]) {
      if (--waiting[next] == 0) ready.push_back(next);
    }
    if (next_on_device[task] >= 0 && --waiting[next_on_device[task]] == 0) {
      ready.push_back(next_on_device[task]);
    }
  }
  if (done != problem.tasks) return false;
  start = std::move(justified);
  return true;
}

}  // namespace

SymmetryBreaking parse_symmetry_breaking(const std::string& text) {
  if (text == "none") return SymmetryBreaking::kNone;
  if (text == "tasks") return SymmetryBreaking::kTaskCount;
  if (text == "time" || text == "utilisation") return SymmetryBreaking::kUtilisation;
  if (text == "batch") return SymmetryBreaking::kBatchItems;
  throw Error(
      fmt::format("milp: unknown symmetry breaking \"{}\" (expected none, tasks, time, "
                  "batch)",
                  text));
}

std::string symmetry_breaking_name(SymmetryBreaking symmetry) {
  switch (symmetry) {
    case SymmetryBreaking::kNone:
      return "none";
    case SymmetryBreaking::kTaskCount:
      return "tasks";
    case SymmetryBreaking::kUtilisation:
      return "time";
    case SymmetryBreaking::kBatchItems:
      return "batch";
  }
  return "none";
}

MilpSolution solve_milp(const TaskGraph& graph, const MilpOptions& options,
                        const MilpRestrictions& restrictions) {
  const Clock::time_point begin = Clock::now();
  if (!(options.time_limit_seconds > 0)) {
    throw Error(
        fmt::format("milp: time limit must be positive, got {}", options.time_limit_seconds));
  }
  const Problem problem = make_problem(graph, restrictions);
  MilpSolution result;
  const std::size_t tasks = problem.tasks;
  const std::size_t devices = problem.devices;
  if (tasks == 0) {
    result.status = "optimal";
    result.has_solution = true;
    result.seconds = seconds_since(begin);
    return result;
  }
  for (std::size_t task = 0; task < tasks; ++task) {
    if (std::none_of(problem.allowed[task].begin(), problem.allowed[task].end(),
                     [](bool allowed) { return allowed; })) {
      result.status = "infeasible";
      result.seconds = seconds_since(begin);
      return result;
    }
  }

  if (tasks == 1) {
    // One task: its best device is the one where it finishes first.
    int best = -1;
    for (std::size_t device = 0; device < devices; ++device) {
      if (!problem.allowed[0][device]) continue;
      const double finish = problem.ready[0][device] + graph.tasks[0].time[device];
      if (best < 0 || finish < problem.ready[0][best] + graph.tasks[0].time[best]) {
        best = static_cast<int>(device);
      }
    }
    result.status = "optimal";
    result.has_solution = true;
    result.device = {best};
    result.start = {problem.ready[0][best]};
    result.objective = result.solver_objective = result.bound =
        problem.ready[0][best] + graph.tasks[0].time[best];
    result.seconds = seconds_since(begin);
    return result;
  }

  // Warm start and horizon.
  std::optional<Schedule> warm;
  if (options.warm_start) warm = list_schedule(problem);
  const std::vector<std::vector<int>> classes = options.symmetry == SymmetryBreaking::kNone
                                                    ? std::vector<std::vector<int>>{}
                                                    : interchangeable_classes(problem);
  for (const auto& members : classes) result.symmetric_devices += static_cast<int>(members.size());
  if (warm && !classes.empty()) order_by_symmetry(*warm, problem, classes, options.symmetry);
  // Shares of sliced nodes must be supported sizes (condition 5), if asked for.
  int group_count = 0;
  const std::vector<int> group_of_task = slice_groups(graph, &group_count);
  std::vector<std::vector<int>> group_members(group_count);
  for (std::size_t task = 0; task < tasks; ++task)
    group_members[group_of_task[task]].push_back(static_cast<int>(task));
  const auto supported_share = [&](int group, std::size_t device, double items) {
    const auto& sizes = graph.machine.devices[device].batch_sizes;
    if (items == 0 || sizes.empty()) return true;
    return std::find(sizes.begin(), sizes.end(), static_cast<int64_t>(items)) != sizes.end() ||
           group_members[group].size() < 2;
  };
  if (warm && options.supported_shares) {
    std::vector<std::vector<double>> share(group_count, std::vector<double>(devices, 0.0));
    for (std::size_t task = 0; task < tasks; ++task) {
      share[group_of_task[task]][warm->device[task]] += task_items(graph.tasks[task]);
    }
    for (int group = 0; group < group_count && warm; ++group) {
      for (std::size_t device = 0; device < devices; ++device) {
        if (!supported_share(group, device, share[group][device])) {
          warm.reset();
          break;
        }
      }
    }
  }
  double horizon = warm ? warm->makespan : trivial_horizon(problem);
  const HeadsAndTails bounds = heads_and_tails(problem);
  const double lower = bounds.makespan;
  // The warm start as the answer, with the heads-and-tails bound.
  const auto warm_result = [&] {
    result.status = warm->makespan <= lower * (1 + 1e-9) ? "optimal" : "time_limit";
    result.has_solution = true;
    result.device = warm->device;
    result.start = warm->start;
    result.objective = result.solver_objective = warm->makespan;
    result.bound = std::min(lower, warm->makespan);
    result.gap = warm->makespan > 0 ? (warm->makespan - result.bound) / warm->makespan : 0.0;
    result.seconds = seconds_since(begin);
    return result;
  };
  // Too little time for CBC to improve on the warm start; CBC 2.10 stopped within its
  // preprocessing also crashes now and then (CglPreProcess::postProcess), seen with the 0.05 s
  // solves MILP-SPLIT's modules get when the budget runs short.
  if (warm && options.time_limit_seconds - seconds_since(begin) < kLeastSolverSeconds) {
    return warm_result();
  }
  if (!(horizon > 0)) {
    // Every task takes no time: any assignment the restrictions allow is optimal.
    if (warm) {
      result.status = "optimal";
      result.has_solution = true;
      result.device = warm->device;
      result.start = warm->start;
      result.seconds = seconds_since(begin);
      return result;
    }
    horizon = 1.0;
  }
  const double scale = horizon / kScaledHorizon;
  const double big_m = kScaledHorizon;
  const auto scaled = [&](double seconds) { return seconds / scale; };

  ProgramBuilder program;
  std::vector<std::vector<int>> x(tasks, std::vector<int>(devices, -1));
  std::vector<int> start_column(tasks);
  for (std::size_t task = 0; task < tasks; ++task) {
    for (std::size_t device = 0; device < devices; ++device) {
      if (!problem.allowed[task][device]) continue;
      // A device too slow to finish the task within the horizon cannot be in an optimum.
      if (!bounds.head.empty() &&
          bounds.head[task] + graph.tasks[task].time[device] + bounds.tail[task] >
              horizon * (1 + 1e-9)) {
        continue;
      }
      x[task][device] = program.add_column(0, 1, 0, true);
    }
    if (std::all_of(x[task].begin(), x[task].end(), [](int column) { return column < 0; })) {
      result.status = "infeasible";
      result.seconds = seconds_since(begin);
      return result;
    }
    const double head = bounds.head.empty() ? 0.0 : std::min(scaled(bounds.head[task]), big_m);
    start_column[task] = program.add_column(head, big_m, 0, false);
  }
  const int makespan_column = program.add_column(std::min(scaled(lower), big_m), big_m, 1.0, false);
  const auto duration_terms = [&](int task, double sign) {
    std::vector<std::pair<int, double>> terms;
    for (std::size_t device = 0; device < devices; ++device) {
      if (x[task][device] >= 0) {
        terms.push_back({x[task][device], sign * scaled(graph.tasks[task].time[device])});
      }
    }
    return terms;
  };

  // Condition 1, and the ready times of the restrictions.
  for (std::size_t task = 0; task < tasks; ++task) {
    std::vector<std::pair<int, double>> terms;
    std::vector<std::pair<int, double>> ready_terms{{start_column[task], 1.0}};
    bool any_ready = false;
    for (std::size_t device = 0; device < devices; ++device) {
      if (x[task][device] < 0) continue;
      terms.push_back({x[task][device], 1.0});
      if (problem.ready[task][device] > 0) {
        ready_terms.push_back({x[task][device], -scaled(problem.ready[task][device])});
        any_ready = true;
      }
    }
    program.add_row(terms, 1.0, 1.0);
    if (any_ready) program.add_row(ready_terms, 0.0, COIN_DBL_MAX);
  }
  // Condition 2, for every task with the work that must follow it (for tasks with successors
  // the rows are implied in integer solutions, but they tighten the relaxation).
  for (std::size_t task = 0; task < tasks; ++task) {
    auto terms = duration_terms(static_cast<int>(task), -1.0);
    terms.push_back({makespan_column, 1.0});
    terms.push_back({start_column[task], -1.0});
    program.add_row(terms, bounds.tail.empty() ? 0.0 : scaled(bounds.tail[task]), COIN_DBL_MAX);
  }
  // Each device is busy at most C (tasks on one device do not overlap; strengthens the
  // relaxation). Ready times cannot be subtracted: a device may end up unused.
  for (std::size_t device = 0; device < devices; ++device) {
    std::vector<std::pair<int, double>> terms{{makespan_column, -1.0}};
    for (std::size_t task = 0; task < tasks; ++task) {
      if (x[task][device] >= 0)
        terms.push_back({x[task][device], scaled(graph.tasks[task].time[device])});
    }
    if (terms.size() > 1) program.add_row(terms, -COIN_DBL_MAX, 0.0);
  }
  // Condition 3: precedence with communication.
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [producer, consumer] = graph.edges[edge];
    auto base = duration_terms(producer, -1.0);
    base.push_back({start_column[consumer], 1.0});
    base.push_back({start_column[producer], -1.0});
    program.add_row(base, 0.0, COIN_DBL_MAX);
    for (std::size_t from = 0; from < devices; ++from) {
      if (x[producer][from] < 0) continue;
      for (std::size_t to = 0; to < devices; ++to) {
        if (to == from || x[consumer][to] < 0) continue;
        const double transfer = graph.edge_time(edge, from, to);
        if (!std::isfinite(transfer)) {
          program.add_row({{x[producer][from], 1.0}, {x[consumer][to], 1.0}}, -COIN_DBL_MAX, 1.0);
          continue;
        }
        if (transfer <= 0) continue;
        const double cost = scaled(transfer);
        auto terms = base;
        terms.push_back({x[producer][from], -cost});
        terms.push_back({x[consumer][to], -cost});
        program.add_row(terms, -cost, COIN_DBL_MAX);
      }
    }
  }
  // Condition 7 for the pairs the transitive closure leaves unordered.
  const auto head_of = [&](std::size_t task) {
    return bounds.head.empty() ? 0.0 : scaled(bounds.head[task]);
  };
  const auto latest_start = [&](std::size_t task) {
    if (bounds.tail.empty()) return big_m;
    return std::max(0.0, big_m - scaled(bounds.tail[task] + bounds.fastest[task]));
  };
  const Reachability reachability(graph);
  std::vector<std::pair<std::pair<int, int>, int>> order_columns;
  for (std::size_t a = 0; a < tasks; ++a) {
    for (std::size_t b = a + 1; b < tasks; ++b) {
      const int first = static_cast<int>(a);
      const int second = static_cast<int>(b);
      if (reachability.ordered(first, second)) {
        ++result.ordered_pairs;
        continue;
      }
      std::vector<std::size_t> shared;
      for (std::size_t device = 0; device < devices; ++device) {
        if (x[a][device] < 0 || x[b][device] < 0) continue;
        if (graph.tasks[a].time[device] <= 0 && graph.tasks[b].time[device] <= 0) continue;
        shared.push_back(device);
      }
      if (shared.empty()) continue;
      ++result.disjunctive_pairs;
      const int before = program.add_column(0, 1, 0, true);
      order_columns.push_back({{first, second}, before});
      for (std::size_t device : shared) {
        // before = 1: a ends before b starts; before = 0: b ends before a starts. Each M is
        // the most its row's left side can be in any schedule within the horizon, whatever
        // the devices (a starts by the horizon minus its fastest time and tail, b after its
        // head), so the rows relax no further than they must.
        const double a_then_b =
            std::max(0.0, latest_start(a) + scaled(graph.tasks[a].time[device]) - head_of(b));
        const double b_then_a =
            std::max(0.0, latest_start(b) + scaled(graph.tasks[b].time[device]) - head_of(a));
        program.add_row({{start_column[a], 1.0},
                         {start_column[b], -1.0},
                         {before, a_then_b},
                         {x[a][device], a_then_b},
                         {x[b][device], a_then_b}},
                        -COIN_DBL_MAX, 3 * a_then_b - scaled(graph.tasks[a].time[device]));
        program.add_row({{start_column[b], 1.0},
                         {start_column[a], -1.0},
                         {before, -b_then_a},
                         {x[a][device], b_then_a},
                         {x[b][device], b_then_a}},
                        -COIN_DBL_MAX, 2 * b_then_a - scaled(graph.tasks[b].time[device]));
      }
    }
  }
  // Condition 6: weights within memory, one copy per weight group and device.
  std::map<std::pair<int, std::size_t>, int> residency;
  for (std::size_t device = 0; device < devices; ++device) {
    if (!std::isfinite(problem.memory_left[device])) continue;
    double demand = 0;
    std::vector<bool> key_seen(problem.key_bytes.size(), false);
    for (std::size_t task = 0; task < tasks; ++task) {
      const int key = problem.memory_key[task];
      if (x[task][device] >= 0 && !key_seen[key]) {
        key_seen[key] = true;
        demand += problem.key_bytes[key];
      }
    }
    if (demand <= problem.memory_left[device]) continue;  // cannot bind
    std::vector<std::vector<int>> members(problem.key_bytes.size());
    for (std::size_t task = 0; task < tasks; ++task) {
      if (x[task][device] >= 0) members[problem.memory_key[task]].push_back(static_cast<int>(task));
    }
    std::vector<std::pair<int, double>> memory_terms;
    // Rows in megabytes keep coefficients near one.
    constexpr double kUnit = 1e6;
    for (std::size_t key = 0; key < members.size(); ++key) {
      if (members[key].empty() || problem.key_bytes[key] <= 0) continue;
      const double bytes = problem.key_bytes[key] / kUnit;
      if (members[key].size() == 1) {
        memory_terms.push_back({x[members[key][0]][device], bytes});
        continue;
      }
      const int resident = program.add_column(0, 1, 0, false);
      residency[{static_cast<int>(key), device}] = resident;
      for (int task : members[key]) {
        program.add_row({{resident, 1.0}, {x[task][device], -1.0}}, 0.0, COIN_DBL_MAX);
      }
      memory_terms.push_back({resident, bytes});
    }
    program.add_row(memory_terms, -COIN_DBL_MAX, problem.memory_left[device] / kUnit);
  }
  // Condition 5 (optional): a device's share of a sliced node is a supported batch size.
  std::map<std::tuple<int, std::size_t, int64_t>, int> share_columns;
  if (options.supported_shares) {
    for (int group = 0; group < group_count; ++group) {
      if (group_members[group].size() < 2) continue;
      double total = 0;
      for (int task : group_members[group]) total += task_items(graph.tasks[task]);
      for (std::size_t device = 0; device < devices; ++device) {
        const auto& sizes = graph.machine.devices[device].batch_sizes;
        if (sizes.empty()) continue;
        std::vector<std::pair<int, double>> share_terms;
        std::vector<std::pair<int, double>> choice_terms;
        for (int task : group_members[group]) {
          if (x[task][device] >= 0)
            share_terms.push_back({x[task][device], task_items(graph.tasks[task])});
        }
        if (share_terms.empty()) continue;
        for (int64_t size : sizes) {
          if (size <= 0 || static_cast<double>(size) > total) continue;
          const int chosen = program.add_column(0, 1, 0, true);
          share_columns[{group, device, size}] = chosen;
          share_terms.push_back({chosen, -static_cast<double>(size)});
          choice_terms.push_back({chosen, 1.0});
        }
        program.add_row(share_terms, 0.0, 0.0);
        if (!choice_terms.empty()) program.add_row(choice_terms, -COIN_DBL_MAX, 1.0);
      }
    }
  }
  // Section VI: order interchangeable devices by the chosen quantity.
  for (const auto& members : classes) {
    for (std::size_t k = 0; k + 1 < members.size(); ++k) {
      std::vector<std::pair<int, double>> terms;
      for (std::size_t task = 0; task < tasks; ++task) {
        const int here = x[task][members[k]];
        const int next = x[task][members[k + 1]];
        if (here >= 0)
          terms.push_back({here, symmetry_metric(options.symmetry, graph.tasks[task], members[k])});
        if (next >= 0)
          terms.push_back(
              {next, -symmetry_metric(options.symmetry, graph.tasks[task], members[k + 1])});
      }
      program.add_row(terms, 0.0, COIN_DBL_MAX);
    }
  }
  result.columns = program.columns();
  result.rows = program.rows();

  OsiClpSolverInterface solver;
  program.load(solver);
  solver.messageHandler()->setLogLevel(0);
  solver.setHintParam(OsiDoReducePrint, true, OsiHintTry);
  CbcModel model(solver);
  model.messageHandler()->setLogLevel(options.verbosity >= 2 ? 1 : 0);
  ProgressReporter reporter(begin, scale, options.time_limit_seconds, options.verbosity >= 1);
  model.passInEventHandler(&reporter);
  if (warm) {
    std::vector<std::pair<std::string, double>> values;
    std::vector<double> finish(tasks);
    for (std::size_t task = 0; task < tasks; ++task) {
      finish[task] = warm->start[task] + graph.tasks[task].time[warm->device[task]];
      for (std::size_t device = 0; device < devices; ++device) {
        if (x[task][device] >= 0) {
          values.push_back({ProgramBuilder::solver_name(x[task][device]),
                            warm->device[task] == static_cast<int>(device) ? 1.0 : 0.0});
        }
      }
      values.push_back(
          {ProgramBuilder::solver_name(start_column[task]), scaled(warm->start[task])});
    }
    values.push_back({ProgramBuilder::solver_name(makespan_column), scaled(warm->makespan)});
    for (const auto& [pair, column] : order_columns) {
      const auto [a, b] = pair;
      // The warm start appends to devices, so on a shared device start order is the order.
      const bool a_first = warm->start[a] < warm->start[b] ||
                           (warm->start[a] == warm->start[b] &&
                            (finish[a] < finish[b] ||
                             (finish[a] == finish[b] &&
                              problem.topological_position[a] < problem.topological_position[b])));
      values.push_back({ProgramBuilder::solver_name(column), a_first ? 1.0 : 0.0});
    }
    for (const auto& [key_device, column] : residency) {
      bool resident = false;
      for (std::size_t task = 0; task < tasks; ++task) {
        resident = resident || (problem.memory_key[task] == key_device.first &&
                                warm->device[task] == static_cast<int>(key_device.second));
      }
      values.push_back({ProgramBuilder::solver_name(column), resident ? 1.0 : 0.0});
    }
    if (!share_columns.empty()) {
      std::vector<std::vector<double>> share(group_count, std::vector<double>(devices, 0.0));
      for (std::size_t task = 0; task < tasks; ++task) {
        share[group_of_task[task]][warm->device[task]] += task_items(graph.tasks[task]);
      }
      for (const auto& [key, column] : share_columns) {
        const auto [group, device, size] = key;
        values.push_back({ProgramBuilder::solver_name(column),
                          share[group][device] == static_cast<double>(size) ? 1.0 : 0.0});
      }
    }
    model.setMIPStart(values);
  }

  // CBC runs in a child process: Debian's CBC keeps its assertions, and one failing (seen:
  // CbcModel::reducedCostFix on an 11-task module) would otherwise abort cleave.
  const double remaining = std::max(0.01, options.time_limit_seconds - seconds_since(begin));
  std::string failure;
  const std::optional<std::vector<char>> bytes =
      run_isolated([&] { return encode(run_cbc(model, options, remaining, program.columns())); },
                   1.5 * remaining + 10.0, &failure);
  result.seconds = seconds_since(begin);
  if (!bytes) {
    result.solver_failure = failure;
    if (warm) {
      MilpSolution kept = warm_result();
      kept.solver_failure = failure;
      return kept;
    }
    result.status = "time_limit";
    return result;
  }
  const CbcOutcome outcome = decode(*bytes);
  const double* best = outcome.has_best ? outcome.best.data() : nullptr;
  // The warm start is a feasible schedule, so a CBC stopped early that reports none (or even
  // "infeasible", as it can when stopped within preprocessing) still has that one.
  if (best == nullptr && warm) return warm_result();
  if (outcome.infeasible || (best == nullptr && outcome.proven_optimal)) {
    result.status = "infeasible";
    return result;
  }
  result.bound = std::max(0.0, outcome.bound * scale);
  if (best == nullptr) {
    result.status = "time_limit";
    return result;
  }
  result.has_solution = true;
  result.status = outcome.proven_optimal ? "optimal" : "time_limit";
  result.solver_objective = outcome.objective * scale;

  // Polish: fix the integer choices and solve the LP again, so the start times and makespan
  // are exact for that assignment and order rather than within CBC's integer tolerance.
  std::vector<double> values(best, best + program.columns());
  {
    OsiClpSolverInterface polish;
    program.load(polish);
    polish.messageHandler()->setLogLevel(0);
    for (int column = 0; column < program.columns(); ++column) {
      if (!program.integer(column)) continue;
      const double fixed = std::round(values[column]);
      polish.setColBounds(column, fixed, fixed);
    }
    polish.initialSolve();
    if (polish.isProvenOptimal()) {
      const double* polished = polish.getColSolution();
      values.assign(polished, polished + program.columns());
    }
  }
  result.device.assign(tasks, -1);
  result.start.assign(tasks, 0.0);
  for (std::size_t task = 0; task < tasks; ++task) {
    double best_value = -1;
    for (std::size_t device = 0; device < devices; ++device) {
      if (x[task][device] >= 0 && values[x[task][device]] > best_value) {
        best_value = values[x[task][device]];
        result.device[task] = static_cast<int>(device);
      }
    }
    result.start[task] = std::max(0.0, values[start_column[task]] * scale);
  }
  result.objective = values[makespan_column] * scale;
  left_justify(problem, result.device, result.start);
  if (result.status == "optimal") result.bound = std::min(result.bound, result.objective);
  result.gap = result.objective > 0
                   ? std::max(0.0, (result.objective - result.bound) / result.objective)
                   : 0.0;
  return result;
}

Plan plan_from_schedule(const TaskGraph& graph, const std::vector<int>& device,
                        const std::vector<double>& start, const std::string& strategy) {
  Plan plan;
  plan.strategy = strategy;
  plan.tasks.resize(graph.tasks.size());
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    plan.tasks[task].task = static_cast<int>(task);
    plan.tasks[task].worker = device.at(task);
  }
  plan.order = orders_from_starts(graph, device, start);
  set_objective_from_graph(plan, graph);
  validate_plan(plan, graph);
  apply_simulation(plan, simulate(plan, graph));
  return plan;
}

void set_objective_from_graph(Plan& plan, const TaskGraph& graph) {
  if (graph.tasks.empty()) return;
  int64_t first = graph.tasks.front().batch_begin;
  int64_t last = graph.tasks.front().batch_end;
  for (const Task& task : graph.tasks) {
    first = std::min(first, task.batch_begin);
    last = std::max(last, task.batch_end);
  }
  if (last - first > 1) {
    plan.objective = "throughput";
    plan.batch = last - first;
  } else {
    plan.objective = "latency";
    plan.batch = 1;
  }
}

Plan plan_milp(const TaskGraph& graph, const MilpOptions& options) {
  const MilpSolution solution = solve_milp(graph, options);
  if (solution.status == "infeasible") {
    throw Error(
        fmt::format("milp: no schedule exists: the devices' memory ({}) or the missing "
                    "links leave some task nowhere to run",
                    [&] {
                      std::string text;
                      for (const Device& device : graph.machine.devices) {
                        if (!text.empty()) text += ", ";
                        text += fmt::format("{} {} bytes", device.name, device.memory_bytes);
                      }
                      return text;
                    }()));
  }
  if (!solution.has_solution) {
    if (!solution.solver_failure.empty()) {
      throw Error(fmt::format("milp: no schedule: {}", solution.solver_failure));
    }
    throw Error(
        fmt::format("milp: no schedule found within the time limit of {} s (best bound "
                    "{} s); raise --time-limit",
                    options.time_limit_seconds, solution.bound));
  }
  Plan plan = plan_from_schedule(graph, solution.device, solution.start, "milp");
  plan.notes["status"] = solution.status;
  plan.notes["objective"] = solution.objective;
  plan.notes["solver_objective"] = solution.solver_objective;
  plan.notes["planner_makespan"] = solution.objective;
  plan.notes["bound"] = solution.bound;
  plan.notes["gap"] = solution.gap;
  plan.notes["solve_seconds"] = solution.seconds;
  plan.notes["columns"] = solution.columns;
  plan.notes["rows"] = solution.rows;
  plan.notes["ordered_pairs"] = solution.ordered_pairs;
  plan.notes["disjunctive_pairs"] = solution.disjunctive_pairs;
  plan.notes["symmetry"] = symmetry_breaking_name(options.symmetry);
  plan.notes["symmetric_devices"] = solution.symmetric_devices;
  if (!solution.solver_failure.empty()) plan.notes["solver_failure"] = solution.solver_failure;
  if (plan.objective == "throughput" && plan.makespan > 0) {
    plan.notes["throughput"] = static_cast<double>(plan.batch) / plan.makespan;
  }
  return plan;
}

}  // namespace cleave
