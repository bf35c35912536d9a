// Exact mapping and scheduling: the DiviML mixed-integer program, solved with COIN-OR CBC.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

/// Extra ordering constraints between interchangeable devices (DiviML section VI): every
/// schedule has copies that only permute such devices, and ordering one quantity across them
/// keeps one copy of each while cutting the search space.
enum class SymmetryBreaking {
  kNone,
  kTaskCount,    ///< Interchangeable devices run non-increasing numbers of tasks.
  kUtilisation,  ///< ... non-increasing busy time.
  kBatchItems,   ///< ... non-increasing numbers of batch items (sum of slice sizes).
};

/// Parses "none", "tasks", "time" (or "utilisation"), "batch"; throws Error otherwise.
SymmetryBreaking parse_symmetry_breaking(const std::string& text);
std::string symmetry_breaking_name(SymmetryBreaking symmetry);

struct MilpOptions {
  double time_limit_seconds = 60;  ///< Wall clock; then the best plan found so far is returned.
  double relative_gap = 1e-6;      ///< Stop once (incumbent - bound) / incumbent is below this.
  SymmetryBreaking symmetry = SymmetryBreaking::kNone;
  /// 0: silent; 1: a progress line on stderr about once a second for solves that take longer
  /// than a second; 2: also CBC's own log.
  int verbosity = 1;
  /// Start CBC from a list schedule (earliest finish time): an incumbent from the first second,
  /// and the big-M constants of the disjunctions become its makespan instead of a sum of times.
  bool warm_start = true;
  /// The paper's condition 5 for batched graphs: the number of samples of one node a device
  /// takes (sum of its slices there) must be one of the device's batch_sizes. Off by default:
  /// cleave runs slices one by one, so batch_task_graph's per-slice check is what execution
  /// needs; turn it on to get plans whose per-device shares are also runnable as one batch.
  bool supported_shares = false;
  /// CBC's branch-and-bound threads (its -threads option); 1 runs it on one core.
  int threads = 1;
};

/// Conditions that make the program solve one part of a larger problem (MILP-SPLIT modules,
/// lower-bound subgraphs). Every vector may be empty, meaning "no condition".
struct MilpRestrictions {
  std::vector<std::vector<bool>> allowed;    ///< [task][device]: may the task run there.
  std::vector<std::vector<double>> release;  ///< [task][device]: earliest start there, s.
  std::vector<double> device_available;      ///< [device]: busy until then, s.
  std::vector<double> memory_used;           ///< [device]: bytes other parts already hold.
};

/// What the solver found. Times are seconds on the task graph's clock.
struct MilpSolution {
  std::string status;           ///< "optimal", "time_limit" or "infeasible".
  bool has_solution = false;    ///< An incumbent exists (always, unless infeasible or none
                                ///< was found in time).
  std::vector<int> device;      ///< Per task.
  std::vector<double> start;    ///< Per task, the solver's start times.
  double objective = 0;         ///< Makespan of the incumbent: the LP with its integer choices
                                ///< fixed, solved again (so tolerances do not blur it).
  double solver_objective = 0;  ///< The incumbent's makespan as CBC reported it.
  double bound = 0;             ///< Proven lower bound on the optimum (valid at time limits).
  double gap = 0;               ///< (objective - bound) / objective.
  double seconds = 0;           ///< Wall clock of the whole solve.
  int columns = 0;
  int rows = 0;
  int ordered_pairs = 0;      ///< Task pairs the transitive closure orders (no disjunction).
  int disjunctive_pairs = 0;  ///< Pairs that need an order variable (condition 7).
  int symmetric_devices = 0;  ///< Devices in classes that symmetry breaking ordered.
  /// Why CBC gave no answer when its process died or overran (the warm start is then the
  /// solution, if there is one); empty when it answered.
  std::string solver_failure;
};

/// Solves the program for `graph` under `restrictions`. Never throws for an infeasible or
/// unsolved program: the status says so. Throws Error for malformed input.
MilpSolution solve_milp(const TaskGraph& graph, const MilpOptions& options,
                        const MilpRestrictions& restrictions = {});

/// The exact planner. Variables: an assignment x[i][d] per task and device, a start time per
/// task, the makespan C, one order variable per task pair the DAG leaves unordered, and (with
/// memory limits) per weight group and device a residency variable. Predicted times come from
/// the simulator on the solver's assignment and order. On a time limit the incumbent is
/// returned with notes.status = "time_limit" and notes.gap; throws Error when the program is
/// infeasible (memory, links) or no incumbent was found in time.
Plan plan_milp(const TaskGraph& graph, const MilpOptions& options = {});

/// Builds a plan from per-task devices and start times: per-device orders by start time (zero-
/// length tasks first on ties), times from the simulator. Throws Error if the orders deadlock.
Plan plan_from_schedule(const TaskGraph& graph, const std::vector<int>& device,
                        const std::vector<double>& start, const std::string& strategy);

/// "throughput" with the batch size when the graph's tasks are slices of a batch (any task
/// covers more than one sample, or tasks cover several ranges), otherwise "latency" and 1.
void set_objective_from_graph(Plan& plan, const TaskGraph& graph);

}  // namespace cleave
