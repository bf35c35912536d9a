// The planner table: Ramiel's clustering planners and DiviML's mapping planners by name.
#include "plan/registry.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "ir/graph.h"
#include "plan/cluster/hypercluster.h"
#include "plan/cluster/linear_clustering.h"
#include "plan/schedule/annealing.h"
#include "plan/schedule/evolution.h"
#include "plan/schedule/greedy.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/met.h"
#include "plan/schedule/milp.h"
#include "plan/schedule/milp_split.h"
#include "support/cpu_quota.h"

namespace cleave {

namespace {

constexpr PlannerFamily kRamiel = PlannerFamily::kTaskParallel;
constexpr PlannerFamily kDiviml = PlannerFamily::kHeterogeneous;
constexpr PlannerFamily kStream = PlannerFamily::kStream;

void require_one_sample(const std::string& name, int samples) {
  if (samples == 1) return;
  throw Error(
      fmt::format("strategy '{}' plans one sample; use hypercluster or switched-hypercluster for "
                  "--samples {}",
                  name, samples));
}

// A planner that keeps the task graph and plans one sample.
PlannerFunction one_sample(std::string name,
                           std::function<Plan(const TaskGraph&, const ScheduleOptions&)> plan) {
  return [name = std::move(name), plan = std::move(plan)](const TaskGraph& graph, int samples,
                                                          const ScheduleOptions& options) {
    require_one_sample(name, samples);
    return PlannedTasks{graph, plan(graph, options)};
  };
}

PlannerFunction hypercluster(bool switched) {
  return [switched](const TaskGraph& graph, int samples, const ScheduleOptions&) {
    HyperclusterOptions options;
    options.samples = samples;
    options.switched = switched;
    return plan_hypercluster(graph, options);
  };
}

// A stream planner's entry: it places stream graphs (stream/stream_planner.cc), not tasks.
PlannerFunction stream_only(std::string name) {
  return [name = std::move(name)](const TaskGraph&, int, const ScheduleOptions&) -> PlannedTasks {
    throw Error(fmt::format(
        "strategy '{}' places the filters of a stream program (cleave stream run --placement "
        "{}); it plans no task graph",
        name, name));
  };
}

bool plans_task_graphs(const PlannerEntry& entry) {
  return entry.family != PlannerFamily::kStream;
}

}  // namespace

const std::vector<PlannerEntry>& planners() {
  static const std::vector<PlannerEntry> table = {
      {"lc", kRamiel, "linear clustering of critical paths, merged and mapped onto the workers",
       false, true,
       one_sample("lc", [](const TaskGraph& graph,
                           const ScheduleOptions&) { return plan_linear_clustering(graph); }),
       ""},
      {"clone", kRamiel, "lc, then cheap producers copied onto the workers that read them", false,
       true,
       [](const TaskGraph& graph, int samples, const ScheduleOptions& options) {
         require_one_sample("clone", samples);
         CloneOptions clone;
         clone.max_trials = options.clone_trials;
         return plan_with_cloning(graph, plan_linear_clustering(graph), clone);
       },
       "lc"},
      {"hypercluster", kRamiel, "several samples in flight, cluster copies interleaved", true, true,
       hypercluster(false), ""},
      {"switched-hypercluster", kRamiel,
       "hyperclusters whose samples' clusters may change workers to balance load", true, true,
       hypercluster(true), ""},
      {"met", kDiviml, "minimum execution time: each task on its fastest device", false, false,
       one_sample("met", [](const TaskGraph& graph,
                            const ScheduleOptions&) { return plan_met(graph, {}); }),
       ""},
      {"greedy", kDiviml, "topological order, each task where it finishes earliest (appended)",
       false, false,
       one_sample("greedy",
                  [](const TaskGraph& graph, const ScheduleOptions& options) {
                    return plan_greedy(graph, {.time_limit_seconds = options.time_limit_seconds});
                  }),
       ""},
      {"heft", kDiviml, "heterogeneous earliest finish time, upward rank, insertion", false, false,
       one_sample("heft",
                  [](const TaskGraph& graph, const ScheduleOptions& options) {
                    return plan_heft(graph, {.time_limit_seconds = options.time_limit_seconds});
                  }),
       ""},
      {"annealing", kDiviml, "simulated annealing over assignments (seeded)", false, false,
       one_sample("annealing",
                  [](const TaskGraph& graph, const ScheduleOptions& options) {
                    AnnealingOptions annealing;
                    annealing.seed = options.seed;
                    annealing.max_iterations = options.max_iterations;
                    annealing.time_limit_seconds = options.time_limit_seconds;
                    return plan_annealing(graph, annealing);
                  }),
       ""},
      {"evolution", kDiviml, "biased (1+1) evolutionary algorithm over assignments (seeded)", false,
       false,
       one_sample("evolution",
                  [](const TaskGraph& graph, const ScheduleOptions& options) {
                    EvolutionOptions evolution;
                    evolution.seed = options.seed;
                    evolution.max_iterations = options.max_iterations;
                    evolution.time_limit_seconds = options.time_limit_seconds;
                    return plan_evolution(graph, evolution);
                  }),
       ""},
      {"milp", kDiviml, "exact mixed-integer program (DiviML), COIN-OR CBC, within the time limit",
       false, false,
       one_sample("milp",
                  [](const TaskGraph& graph, const ScheduleOptions& options) {
                    MilpOptions milp;
                    milp.time_limit_seconds = options.time_limit_seconds;
                    milp.symmetry = parse_symmetry_breaking(options.symmetry);
                    milp.relative_gap = options.relative_gap;
                    milp.threads =
                        options.solver_threads > 0 ? options.solver_threads : usable_cores();
                    return plan_milp(graph, milp);
                  }),
       ""},
      {"milp-split", kDiviml,
       "MILP per module of a modular graph, combined by a DP over device pairs", false, false,
       one_sample("milp-split",
                  [](const TaskGraph& graph, const ScheduleOptions& options) {
                    MilpSplitOptions split;
                    split.time_limit_seconds = options.time_limit_seconds;
                    split.module.time_limit_seconds = options.time_limit_seconds;
                    split.module.symmetry = parse_symmetry_breaking(options.symmetry);
                    split.module.relative_gap = options.relative_gap;
                    split.channels = options.channels;
                    split.parallel_solves = options.solver_processes;
                    return plan_milp_split(graph, split);
                  }),
       ""},
      {"balanced", kStream,
       "filters placed by steady-state cost and channel hand-offs, best simulated throughput",
       false, false, stream_only("balanced"), ""},
      {"greedy", kStream, "filters placed longest steady-state cost first, no hand-offs", false,
       false, stream_only("greedy"), ""},
      {"contiguous", kStream, "runs of consecutive filters with the lowest bottleneck", false,
       false, stream_only("contiguous"), ""},
  };
  return table;
}

const PlannerEntry& find_planner(const std::string& name) {
  for (const PlannerEntry& entry : planners()) {
    if (entry.name == name && plans_task_graphs(entry)) return entry;
  }
  std::vector<std::string> names;
  for (const PlannerEntry& entry : planners()) {
    if (plans_task_graphs(entry)) names.push_back(entry.name);
  }
  throw Error(fmt::format("unknown strategy \"{}\" (known: {})", name, fmt::join(names, ", ")));
}

void check_samples(const PlannerEntry& planner, int samples) {
  if (!planner.plans_samples) require_one_sample(planner.name, samples);
}

std::vector<std::string> planner_names(PlannerFamily family) {
  std::vector<std::string> names;
  for (const PlannerEntry& entry : planners()) {
    if (entry.family == family) names.push_back(entry.name);
  }
  return names;
}

}  // namespace cleave
