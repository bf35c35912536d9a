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
//   Where the machine prices message ends (Machine::endpoint_bandwidth, MPI ranks), the message
//   is priced as the simulator prices it, in its linear part (EndPrices): dur_i also holds the
//   sender's copies, one per device a reader of i runs on that i does not (z[i][w] >= x[j][w] -
//   x[i][w], continuous), and a Concat's copies of remote inputs (k_e >= x[j][d] - x[i][d] per
//   edge, continuous); the reader gets the value after i's sends plus the latency, and no
//   earlier than the end of i's computing plus latency + bytes / bandwidth (two rows, the
//   simulator's max); its own copy of each message (k_e times bytes / endpoint_bandwidth)
//   lies between the previous task on its device and its start. Device 0's hand-out is a ready
//   time (the copy and the latency, or the link), a model output made off device 0 a sender's
//   copy and the same two rows against C. Left to the simulator's final prediction, being
//   non-linear: a reader that was waiting overlaps its copy with the link only for the last
//   message it waits for (the program charges none of them when the message comes late, so
//   two late ones cost the simulator one copy more); a second reader of one message on a
//   device pays nothing there (the program charges it again) and a node with outputs of
//   different sizes sends a device the largest it reads there (the program: the largest);
//   device 0's copies of the inputs it hands out and of the outputs it gathers; the busy-
//   neighbour times and the dispatch overheads (Task::busy_time, Machine::task_seconds), which
//   depend on how many devices compute. The objective equals the simulator's prediction of the
//   plan where none of these occur (tests/plan/schedule/milp_priced_test.cc).
//   On a shared link (Machine::shared_link) each pair's rows above still price a message as if
//   it had the link alone; one more row bounds the medium's queue (milp_medium.h): continuous
//   m[i][w] >= x[j][w] - x[i][w] per edge (one message per producer and reading device), and C
//   >= the first producer's earliest end + the sum of m times the message's least time on the
//   medium + the latency less the burst (once, where any crosses) + the least time and tail of
//   a reading task. Exact when the messages follow each other on the medium from the first
//   producer's end (tests/plan/schedule/milp_medium_test.cc); the simulator's gaps and the
//   hand-outs and gathers on the medium are left to its final prediction.
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
#include "plan/schedule/milp.h"

#include <fmt/core.h>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/graph.h"
#include "plan/schedule/cbc_process.h"
#include "plan/schedule/milp_medium.h"
#include "plan/schedule/milp_problem.h"
#include "plan/schedule/milp_program.h"
#include "plan/simulator.h"

namespace cleave {

using namespace milp_detail;

namespace {

// Times are scaled so that the horizon (the big M) is this many units: far above CBC's
// absolute tolerances, far below where they become relative noise.
constexpr double kScaledHorizon = 100.0;
// Below this many seconds left, the warm start is returned without calling CBC.
constexpr double kLeastSolverSeconds = 0.25;

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

namespace {

// The answer when no solver is needed: no task, a task with nowhere to run, or one task (its
// best device is the one where it finishes first); nullopt otherwise.
std::optional<MilpSolution> solve_without_solver(const TaskGraph& graph, const Problem& problem,
                                                 Clock::time_point begin) {
  MilpSolution result;
  const std::size_t tasks = problem.tasks;
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
  if (tasks != 1) return std::nullopt;
  int best = -1;
  for (std::size_t device = 0; device < problem.devices; ++device) {
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

// Whether the warm start gives every sliced node a supported share on each device (condition 5).
bool warm_shares_supported(const TaskGraph& graph, const Problem& problem,
                           const SliceGroups& groups, const Schedule& warm) {
  const std::size_t devices = problem.devices;
  const auto supported_share = [&](int group, std::size_t device, double items) {
    const auto& sizes = graph.machine.devices[device].batch_sizes;
    if (items == 0 || sizes.empty()) return true;
    return std::find(sizes.begin(), sizes.end(), static_cast<int64_t>(items)) != sizes.end() ||
           groups.members[group].size() < 2;
  };
  std::vector<std::vector<double>> share(groups.count, std::vector<double>(devices, 0.0));
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    share[groups.group_of_task[task]][warm.device[task]] += task_items(graph.tasks[task]);
  }
  for (int group = 0; group < groups.count; ++group) {
    for (std::size_t device = 0; device < devices; ++device) {
      if (!supported_share(group, device, share[group][device])) return false;
    }
  }
  return true;
}

// The warm start as the answer, with the heads-and-tails bound; `result` brings the figures
// gathered so far.
MilpSolution warm_answer(MilpSolution result, const Schedule& warm, double lower,
                         Clock::time_point begin) {
  result.status = warm.makespan <= lower * (1 + 1e-9) ? "optimal" : "time_limit";
  result.has_solution = true;
  result.device = warm.device;
  result.start = warm.start;
  result.objective = result.solver_objective = warm.makespan;
  result.bound = std::min(lower, warm.makespan);
  result.gap = warm.makespan > 0 ? (warm.makespan - result.bound) / warm.makespan : 0.0;
  result.seconds = seconds_since(begin);
  return result;
}

// The most the shared link's row can ask of any schedule: every message on the medium.
double medium_worst(const MediumBound& medium) {
  double worst = medium.base + std::max(0.0, medium.once);
  for (const auto& per_device : medium.seconds)
    for (double seconds : per_device) worst += seconds;
  return medium.seconds.empty() ? 0.0 : worst;
}

// Every row of the formulation (conditions 1-7 and the symmetry order).
void add_rows(Program& program, const Problem& problem, const HeadsAndTails& bounds,
              const MediumBound& medium, const SliceGroups& groups,
              const std::vector<std::vector<int>>& classes, const MilpOptions& options) {
  add_assignment_rows(program, problem);
  add_makespan_rows(program, problem, bounds);
  add_medium_rows(program, problem, medium);
  add_precedence_rows(program, problem);
  add_order_rows(program, problem, bounds);
  add_memory_rows(program, problem);
  if (options.supported_shares) add_share_rows(program, problem, groups);
  add_symmetry_rows(program, problem, classes, options.symmetry);
}

// Polish: fix the integer choices and solve the LP again, so the start times and makespan are
// exact for that assignment and order rather than within CBC's integer tolerance.
std::vector<double> polished_values(Program& program, const double* best) {
  std::vector<double> values(best, best + program.builder.columns());
  OsiClpSolverInterface polish;
  program.builder.load(polish);
  polish.messageHandler()->setLogLevel(0);
  for (int column = 0; column < program.builder.columns(); ++column) {
    if (!program.builder.integer(column)) continue;
    const double fixed = std::round(values[column]);
    polish.setColBounds(column, fixed, fixed);
  }
  polish.initialSolve();
  if (polish.isProvenOptimal()) {
    const double* polished = polish.getColSolution();
    values.assign(polished, polished + program.builder.columns());
  }
  return values;
}

// The schedule CBC found, polished and moved as early as it can go, into `result`.
void read_schedule(Program& program, const Problem& problem, const double* best,
                   MilpSolution& result) {
  const double scale = program.scale;
  const std::vector<double> values = polished_values(program, best);
  result.device.assign(problem.tasks, -1);
  result.start.assign(problem.tasks, 0.0);
  for (std::size_t task = 0; task < problem.tasks; ++task) {
    double best_value = -1;
    for (std::size_t device = 0; device < problem.devices; ++device) {
      if (program.x[task][device] >= 0 && values[program.x[task][device]] > best_value) {
        best_value = values[program.x[task][device]];
        result.device[task] = static_cast<int>(device);
      }
    }
    result.start[task] = std::max(0.0, values[program.start[task]] * scale);
  }
  result.objective = values[program.makespan] * scale;
  left_justify(problem, result.device, result.start);
  if (result.status == "optimal") result.bound = std::min(result.bound, result.objective);
  result.gap = result.objective > 0
                   ? std::max(0.0, (result.objective - result.bound) / result.objective)
                   : 0.0;
}

}  // namespace

MilpSolution solve_milp(const TaskGraph& graph, const MilpOptions& options,
                        const MilpRestrictions& restrictions) {
  const Clock::time_point begin = Clock::now();
  if (!(options.time_limit_seconds > 0)) {
    throw Error(
        fmt::format("milp: time limit must be positive, got {}", options.time_limit_seconds));
  }
  const Problem problem = make_problem(graph, restrictions);
  if (std::optional<MilpSolution> trivial = solve_without_solver(graph, problem, begin)) {
    return *trivial;
  }
  MilpSolution result;

  // Warm start and horizon.
  std::optional<Schedule> warm;
  if (options.warm_start) warm = list_schedule(problem);
  const std::vector<std::vector<int>> classes = options.symmetry == SymmetryBreaking::kNone
                                                    ? std::vector<std::vector<int>>{}
                                                    : interchangeable_classes(problem);
  for (const auto& members : classes) result.symmetric_devices += static_cast<int>(members.size());
  if (warm && !classes.empty()) order_by_symmetry(*warm, problem, classes, options.symmetry);
  // The warm start's times on the program's own model (its messages priced as the program
  // prices them), so that it is a feasible MIP start within the horizon.
  const HeadsAndTails bounds = heads_and_tails(problem);
  const MediumBound medium = medium_bound(problem, bounds);
  if (warm) {
    warm = linear_timeline(problem, warm->device,
                           orders_from_starts(graph, warm->device, warm->start));
    // Within the horizon of the program's shared-link row too.
    if (warm)
      warm->makespan = std::max(warm->makespan, medium_makespan(problem, medium, warm->device));
  }
  // Shares of sliced nodes must be supported sizes (condition 5), if asked for.
  const SliceGroups groups = make_slice_groups(graph);
  if (warm && options.supported_shares && !warm_shares_supported(graph, problem, groups, *warm)) {
    warm.reset();
  }
  double horizon = warm ? warm->makespan : trivial_horizon(problem) + medium_worst(medium);
  const double lower = bounds.makespan;
  // Too little time for CBC to improve on the warm start; CBC 2.10 stopped within its
  // preprocessing also crashes now and then (CglPreProcess::postProcess), seen with the 0.05 s
  // solves MILP-SPLIT's modules get when the budget runs short.
  if (warm && (options.time_limit_seconds - seconds_since(begin) < kLeastSolverSeconds ||
               program_nonzeros(graph) > kMaxProgramNonzeros)) {
    return warm_answer(result, *warm, lower, begin);
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
  std::optional<Program> built = add_columns(problem, bounds, horizon, lower, kScaledHorizon);
  if (!built) {
    result.status = "infeasible";
    result.seconds = seconds_since(begin);
    return result;
  }
  Program& program = *built;
  add_rows(program, problem, bounds, medium, groups, classes, options);
  result.ordered_pairs = program.ordered_pairs;
  result.disjunctive_pairs = program.disjunctive_pairs;
  result.columns = program.builder.columns();
  result.rows = program.builder.rows();

  std::string failure;
  const std::optional<CbcOutcome> solved =
      solve_in_child(program, options,
                     warm ? mip_start(program, problem, *warm, groups)
                          : std::vector<std::pair<std::string, double>>{},
                     begin, &failure);
  result.seconds = seconds_since(begin);
  if (!solved) {
    result.solver_failure = failure;
    if (warm) return warm_answer(result, *warm, lower, begin);
    result.status = "time_limit";
    return result;
  }
  const CbcOutcome& outcome = *solved;
  const double* best = outcome.has_best ? outcome.best.data() : nullptr;
  // The warm start is a feasible schedule, so a CBC stopped early that reports none (or even
  // "infeasible", as it can when stopped within preprocessing) still has that one.
  if (best == nullptr && warm) return warm_answer(result, *warm, lower, begin);
  if (outcome.infeasible || (best == nullptr && outcome.proven_optimal)) {
    result.status = "infeasible";
    return result;
  }
  result.bound = std::max(0.0, outcome.bound * program.scale);
  if (best == nullptr) {
    result.status = "time_limit";
    return result;
  }
  result.has_solution = true;
  result.status = outcome.proven_optimal ? "optimal" : "time_limit";
  result.solver_objective = outcome.objective * program.scale;
  read_schedule(program, problem, best, result);
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
