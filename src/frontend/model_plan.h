// Planning a model: cost table + machine -> task graph -> the chosen planner -> Plan (+ file I/O).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cost/cost_table.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

struct ModelPlanOptions {
  /// auto | sequential | lc | clone | hypercluster | switched-hypercluster, or any task-graph
  /// scheduler by name (heft, met, greedy, annealing, evolution, milp, milp-split).
  std::string strategy = "auto";
  int workers = 2;             ///< Parallel workers (CPU core groups).
  int threads_per_worker = 1;  ///< Intra-op threads of each worker.
  int samples = 1;             ///< Samples in flight (hyperclustering when > 1).
  double time_limit_seconds = 10;
  /// The devices to plan for, from a machine file (e.g. MPI ranks with their speed, memory and
  /// links); unset: `workers` CPU workers of `threads_per_worker` threads on this host. With
  /// a machine, `auto` keeps only candidates whose weights fit every device's memory, and a
  /// named strategy whose plan does not fit is refused.
  std::optional<Machine> machine;
  /// The plan must run each node once per sample, each worker its samples one after another
  /// (a generated program takes one task per node and sample): `auto` leaves out the planners
  /// that copy tasks and the hyperclusters, which interleave samples, and a named one plans as
  /// the planner it copies from (PlannerEntry::before_copies: clone as lc).
  bool each_node_once = false;
  /// `auto` plans for exactly `workers` workers (e.g. a program for that many MPI ranks)
  /// instead of every split of workers x threads_per_worker cores.
  bool fixed_workers = false;
};

/// Every strategy name plan_model takes: its own, then the task-graph schedulers' names.
std::vector<std::string> model_strategies();

/// What a candidate's prediction was priced with: `plan --explain`'s costs legend and the
/// JSON's `candidates[i].costs` (candidate_costs.h describes a plan's).
struct CandidateCosts {
  /// The node times: "profile in context", "profile alone", "profile, busy core" (with the
  /// rule that scales it past 1 thread), "analytical", "static weights", "machine file
  /// rooflines", each ", / machine file speeds" where devices declare speeds. Empty: the row
  /// was never predicted.
  std::string source;
  /// Per worker that computes, the intra-op threads its node costs were taken at (a profile's
  /// largest measured count where a worker has more).
  std::vector<int> threads;
  std::string conv_family;  ///< The convolution family the profile timed; empty: none.
  /// The hand-offs between workers: "none" (one worker computes), the host's assumed
  /// shared-memory copy, or the machine file's links, with their latency and bandwidth.
  std::string links;
};

/// One row of `auto`'s candidate table: a plan of one family on one configuration of the
/// resources, its prediction, and why it was not kept.
struct PlanCandidate {
  std::string strategy;  ///< The planner (sequential, lc, heft, data-parallel, stages, ...).
  /// sequential, task, heterogeneous, spatial, pipeline or data-parallel.
  std::string family;
  std::string configuration;         ///< e.g. "lc, 2 workers x 1 thread", "hybrid lc, threads 3+1".
  double predicted_seconds = 0;      ///< Latency of all samples in flight (+inf: not predicted).
  double samples_per_second = 0;     ///< Throughput, for several samples; 0 for one.
  std::vector<double> memory_bytes;  ///< Weight bytes resident per device.
  /// Per device, the most activation bytes held at once over the predicted schedule; empty
  /// where not estimated (pipelined stages).
  std::vector<double> activation_bytes;
  std::string rejected;  ///< Empty for the chosen plan, else why not.
  bool chosen = false;
  /// The budget that cut the row's search short (e.g. "8 of 64 devices searched"); empty when
  /// it searched in full.
  std::string cut_short;
  /// Sub-plans the row's search built (spatial: partitioned graphs); 0 where not counted.
  int searched = 0;
  CandidateCosts costs;  ///< What the prediction used.
};

/// A plan of a model: the task graph it schedules (with the machine), the plan itself, the
/// intra-op threads each worker uses, and what `auto` compared.
struct ModelPlan {
  TaskGraph tasks;
  Plan plan;
  int threads_per_worker = 1;
  /// The convolution family the costs were profiled in (unset: costs of another source). MPI
  /// ranks, which hold only their own weights and so cannot time the model, run this family
  /// under `--layouts auto`, so that what runs is what was predicted.
  std::optional<ConvolutionFamily> convolution_family;
  std::vector<PlanCandidate> candidates;
  double planning_seconds = 0;
  std::string family = "sequential";  ///< The chosen candidate's family and configuration.
  std::string configuration;
  /// `auto` only: plans of the table's fitting rows beside the chosen one, fastest prediction
  /// first: the fastest of each family and the fastest two overall, which the timed check and
  /// `cleave bench --families` run.
  std::vector<ModelPlan> alternatives;
};

/// The plan note that says how the plan's model must be loaded where that is not as the run's
/// --no-optimize says: kExportedFormsFused for a split's partitioned.onnx (no graph pass but the
/// runtime fusions, LoadOptions::fuse_exported_forms).
inline constexpr const char* kModelLoadNote = "model_load";
inline constexpr const char* kExportedFormsFused = "exported-forms-fused";

/// Whether the plan file at `path` notes kExportedFormsFused: `cleave run --no-optimize --plan`
/// then puts the runtime fusions back as it loads the model. False for any other file, or one
/// that cannot be read (read_model_plan reports that, naming the file).
bool plan_fuses_exported_forms(const std::string& path);

/// `workers` CPU workers of `threads_each` threads, pinned to consecutive cores, linked by
/// `links` (a plan's: its cost table's, CostTable::host_links).
Machine cpu_workers(int workers, int threads_each, const HostLinks& links = {});

/// Plans the (already optimized) graph with the costs. `auto` simulates sequential (one
/// worker with all threads intra-op), lc, clone and for several samples the hyperclusters,
/// and keeps the fastest prediction, so a model without useful parallelism is never slowed.
/// This is the one `auto` of every command that plans a model (plan, run, bench, codegen).
ModelPlan plan_model(const Graph& graph, const CostTable& costs, const ModelPlanOptions& options);

/// Auto's candidate table as plan files and reports give it: per row strategy, family,
/// configuration, predicted_seconds and _ms (null when not predicted), memory_bytes,
/// activation_bytes, rejected, chosen, costs ({source, threads, conv_family, links}; null for a
/// row never predicted), and samples_per_second and cut_short where set.
nlohmann::json candidates_to_json(const std::vector<PlanCandidate>& rows);
/// A plan file: the plan, its task graph (task -> node names), threads, and the graph's
/// fingerprint so a plan is never run on another model. `fingerprint`: the graph's, when the
/// caller hashed it before letting its weights' bytes go; empty: graph_fingerprint(graph).
nlohmann::json model_plan_to_json(const ModelPlan& plan, const Graph& graph,
                                  const std::string& fingerprint = "");
/// Reads a plan file for `graph`; refuses (Error naming the file) one made for another model,
/// naming unknown nodes, or one that fails validation (e.g. an order that would deadlock).
ModelPlan model_plan_from_json(const nlohmann::json& json, const Graph& graph,
                               const std::string& origin, bool cores_on_this_host = true,
                               const std::string& fingerprint = "");
/// `cores_on_this_host`: the devices' cores must exist here (the thread executor pins to them);
/// false for plans whose workers are MPI ranks, which may run on other machines.
/// `fingerprint`: the graph's, when the caller computed it (a graph whose weights were left
/// unread); empty: graph_fingerprint(graph).
ModelPlan read_model_plan(const std::string& path, const Graph& graph,
                          bool cores_on_this_host = true, const std::string& fingerprint = "");
/// Writes model_plan_to_json(plan, graph, fingerprint) to `path`.
void write_model_plan(const std::string& path, const ModelPlan& plan, const Graph& graph,
                      const std::string& fingerprint = "");

}  // namespace cleave
