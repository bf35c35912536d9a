// The one place a cost source is chosen, and what is built from costs: task graphs and plans.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cost/cost_table.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "machine/machine.h"
#include "plan/task_graph.h"
#include "runtime/convolution_family.h"

namespace cleave {

/// Which cost table to build, and how.
struct CostChoice {
  std::string source = "profile";  ///< profile, static or analytical.
  /// Intra-op threads measured (profile: 1..max_threads; analytical: the peaks' threads).
  int max_threads = 1;
  /// profile: the convolution family whose kernels are timed; unset: measured_family picks it
  /// for `threads_per_worker` (what `cleave run --plan` will run).
  std::optional<ConvolutionFamily> family;
  int threads_per_worker = 1;
  int repeat = 10;        ///< profile: timed runs per thread count.
  bool use_cache = true;  ///< profile: reuse a cached table.
  /// profile: the table's level checked and scaled as $CLEAVE_PROFILE_LEVEL says
  /// (profile_level.h); false: never.
  bool level_check = true;
  std::function<void(const std::string&)> progress;  ///< May be empty.
};

/// The cost table `choice` names: "static" (Ramiel weights), "analytical" (roofline against
/// this CPU's measured peaks) or "profile" (measured here, cached). Error for any other source.
CostTable choose_costs(const Graph& graph, const CostChoice& choice);

/// The threads a profile for `machine` measures: its largest device's count, capped at this
/// host's cores (more threads than cores measures contention, not the device; the table keeps
/// the largest measured count's time beyond it).
int profile_threads_for(const Machine& machine);

/// Where a plan's workers find the model's inputs and leave its outputs.
enum class ModelValues {
  kShared,     ///< Threads of one process: where they are, nothing is sent.
  kFromRank0,  ///< MPI ranks (a machine file's devices): rank 0 sends each input to the ranks
               ///< that read it and receives each output, which the simulator prices.
};

/// One task per node, each device's time = cost at its thread count / its speed (with
/// analytical costs, a device that declares a roofline gets its own roofline's time instead);
/// edges are the graph's dependences, output bytes the node's outputs. With kFromRank0 each
/// task lists the model inputs it reads and outputs it produces (Task::model_inputs), and a
/// Concat that does not receive its inputs from other ranks in place
/// (concat_inputs_received_in_place) copies them (Task::copies_remote_inputs).
TaskGraph task_graph_for(const Graph& graph, const CostTable& costs, const Machine& machine,
                         ModelValues values = ModelValues::kShared);

/// The task graph of a model on a machine file's devices (MPI ranks: kFromRank0), costed by
/// `source` at profile_threads_for(machine) threads, checked (errors name `origin`).
TaskGraph model_task_graph(const Graph& graph, const Machine& machine, const std::string& source,
                           const std::function<void(const std::string&)>& progress,
                           const std::string& origin);

/// A plan of a model with the costs behind it (`cleave plan`).
struct CostedPlan {
  CostTable costs;
  ModelPlan plan;
};

/// The intra-op threads plan_with_costs measures costs for: the machine file's largest
/// device (profile_threads_for), else workers x threads per worker.
int cost_threads_for(const ModelPlanOptions& options);

/// The costs plan_with_costs plans on: by `source`, at the threads of `options.machine`'s
/// devices, else all workers' threads; profiled in the family its workers' thread count runs.
CostTable plan_costs(const Graph& graph, const std::string& source, const ModelPlanOptions& options,
                     const std::function<void(const std::string&)>& progress);

/// Costs the graph (plan_costs) and plans it.
CostedPlan plan_with_costs(const Graph& graph, const std::string& source,
                           const ModelPlanOptions& options,
                           const std::function<void(const std::string&)>& progress);

}  // namespace cleave
