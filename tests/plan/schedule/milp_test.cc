// Tests of the exact MILP planner against a brute-force optimum on small random graphs.
#include "plan/schedule/milp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ir/graph.h"
#include "plan/random_task_graph.h"
#include "plan/schedule/heft.h"
#include "plan/schedule/modules.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"
#include "property_seeds.h"
#include "quiet_milp.h"

namespace cleave {
namespace {

using testing::quiet_milp;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool close(double a, double b, double relative = 1e-6) {
  return std::abs(a - b) <= relative * std::max({std::abs(a), std::abs(b), 1e-12});
}

// The optimum by enumeration: every assignment that fits memory and links, and for it every
// combination of per-device orders that respect the edges, evaluated like the simulator.
double brute_force_makespan(const TaskGraph& graph) {
  const int tasks = static_cast<int>(graph.tasks.size());
  const int devices = static_cast<int>(graph.machine.size());
  const Reachability reachability(graph);
  const auto in_edges = graph.in_edges();
  double best = kInfinity;
  std::vector<int> device(tasks, 0);
  std::vector<std::vector<int>> order(devices);
  std::vector<double> finish(tasks);

  const auto evaluate = [&]() {
    std::vector<std::size_t> next(devices, 0);
    std::vector<double> free(devices, 0.0);
    std::vector<bool> done(tasks, false);
    int placed = 0;
    double makespan = 0;
    while (placed < tasks) {
      bool progress = false;
      for (int d = 0; d < devices; ++d) {
        if (next[d] >= order[d].size()) continue;
        const int task = order[d][next[d]];
        bool ready = true;
        double start = free[d];
        for (int edge : in_edges[task]) {
          const int producer = graph.edges[edge].first;
          if (!done[producer]) {
            ready = false;
            break;
          }
          start = std::max(start, finish[producer] + graph.edge_time(edge, device[producer], d));
        }
        if (!ready) continue;
        finish[task] = start + graph.tasks[task].time[d];
        free[d] = finish[task];
        done[task] = true;
        ++next[d];
        ++placed;
        progress = true;
        makespan = std::max(makespan, finish[task]);
      }
      if (!progress) return kInfinity;  // the orders deadlock
    }
    return makespan;
  };

  // Per device, every order of its tasks consistent with the edges, then the next device.
  const std::function<void(int)> orders_from = [&](int d) {
    if (d == devices) {
      best = std::min(best, evaluate());
      return;
    }
    std::vector<int> mine;
    for (int task = 0; task < tasks; ++task) {
      if (device[task] == d) mine.push_back(task);
    }
    std::sort(mine.begin(), mine.end());
    do {
      bool consistent = true;
      for (std::size_t i = 0; i < mine.size() && consistent; ++i) {
        for (std::size_t j = i + 1; j < mine.size(); ++j) {
          if (reachability.reaches(mine[j], mine[i])) {
            consistent = false;
            break;
          }
        }
      }
      if (!consistent) continue;
      order[d] = mine;
      orders_from(d + 1);
    } while (std::next_permutation(mine.begin(), mine.end()));
  };

  const std::function<void(int)> assign = [&](int task) {
    if (task == tasks) {
      if (over_memory_worker(graph, device) >= 0) return;
      for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
        const auto [from, to] = graph.edges[edge];
        if (!std::isfinite(graph.edge_time(edge, device[from], device[to]))) return;
      }
      // Busiest device: no order beats it.
      std::vector<double> busy(devices, 0.0);
      for (int t = 0; t < tasks; ++t) busy[device[t]] += graph.tasks[t].time[device[t]];
      if (*std::max_element(busy.begin(), busy.end()) >= best) return;
      orders_from(0);
      return;
    }
    for (int d = 0; d < devices; ++d) {
      if (!std::isfinite(graph.tasks[task].time[d])) continue;
      device[task] = d;
      assign(task + 1);
    }
  };
  assign(0);
  return best;
}

RandomTaskGraphOptions small_graph(uint64_t seed) {
  RandomTaskGraphOptions options;
  options.tasks = 4 + static_cast<int>(seed % 5);  // 4..8
  options.devices = 2 + static_cast<int>(seed % 2);
  options.edge_probability = 0.3;
  options.communication_ratio = 0.8;
  return options;
}

void expect_solver_matches_simulator(const Plan& plan, const TaskGraph& graph) {
  ASSERT_NO_THROW(validate_plan(plan, graph));
  const Simulation simulation = simulate(plan, graph);
  EXPECT_EQ(plan.makespan, simulation.makespan);
  EXPECT_TRUE(close(plan.notes["objective"].get<double>(), simulation.makespan))
      << plan.notes["objective"].get<double>() << " vs " << simulation.makespan;
  EXPECT_TRUE(close(plan.notes["solver_objective"].get<double>(), simulation.makespan))
      << plan.notes["solver_objective"].get<double>() << " vs " << simulation.makespan;
}

TEST(Milp, MatchesBruteForceOnSmallRandomGraphs) {
  for (uint64_t seed = 1; seed <= 30; seed += testing::kPropertySeedStep) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const TaskGraph graph = random_task_graph(seed, small_graph(seed));
    const Plan plan = plan_milp(graph, quiet_milp());
    EXPECT_EQ(plan.notes["status"], "optimal");
    expect_solver_matches_simulator(plan, graph);
    const double optimum = brute_force_makespan(graph);
    EXPECT_TRUE(close(plan.makespan, optimum)) << plan.makespan << " vs brute force " << optimum;
  }
}

TEST(Milp, SeveralSolverThreadsFindTheSameOptimum) {
  MilpOptions threaded = quiet_milp();
  threaded.threads = 2;
  for (uint64_t seed = 40; seed <= 45; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const TaskGraph graph = random_task_graph(seed, small_graph(seed));
    const Plan plan = plan_milp(graph, threaded);
    EXPECT_EQ(plan.notes["status"], "optimal");
    expect_solver_matches_simulator(plan, graph);
    EXPECT_TRUE(close(plan.makespan, brute_force_makespan(graph)));
  }
}

TEST(Milp, MatchesBruteForceWithMemoryLimitsAndUnrunnableTasks) {
  for (uint64_t seed = 100; seed < 115; seed += testing::kPropertySeedStep) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    RandomTaskGraphOptions options = small_graph(seed);
    options.memory_fraction = 0.6;
    options.unrunnable_probability = 0.25;
    const TaskGraph graph = random_task_graph(seed, options);
    const double optimum = brute_force_makespan(graph);
    if (!std::isfinite(optimum)) {
      EXPECT_THROW(plan_milp(graph, quiet_milp()), Error);
      continue;
    }
    const Plan plan = plan_milp(graph, quiet_milp());
    expect_solver_matches_simulator(plan, graph);
    EXPECT_TRUE(close(plan.makespan, optimum)) << plan.makespan << " vs brute force " << optimum;
  }
}

TEST(Milp, NeverWorseThanHeft) {
  for (uint64_t seed = 200; seed < 203; ++seed) {
    RandomTaskGraphOptions options;
    options.tasks = 10;
    const TaskGraph graph = random_task_graph(seed, options);
    const Plan plan = plan_milp(graph, quiet_milp());
    EXPECT_LE(plan.makespan, plan_heft(graph).makespan * (1 + 1e-9)) << "seed " << seed;
  }
}

TEST(Milp, TransitiveClosureLeavesNoDisjunctionsOnAChain) {
  RandomTaskGraphOptions options;
  options.tasks = 6;
  options.devices = 2;
  TaskGraph graph = random_task_graph(3, options);
  for (int task = 0; task + 1 < 6; ++task) graph.edges.emplace_back(task, task + 1);
  const Plan plan = plan_milp(graph, quiet_milp());
  EXPECT_EQ(plan.notes["ordered_pairs"], 15);
  EXPECT_EQ(plan.notes["disjunctive_pairs"], 0);
}

// Devices that differ only by name: the symmetric case of section VI.
TaskGraph identical_devices_graph(uint64_t seed) {
  RandomTaskGraphOptions options;
  options.tasks = 7;
  options.devices = 3;
  options.edge_probability = 0.25;
  TaskGraph graph = random_task_graph(seed, options);
  for (Device& device : graph.machine.devices) {
    device.kind = "cpu";
    device.speed = 1;
  }
  for (auto& row : graph.machine.bandwidth) std::fill(row.begin(), row.end(), 1e9);
  for (Task& task : graph.tasks) std::fill(task.time.begin(), task.time.end(), task.time[0]);
  return graph;
}

TEST(Milp, SymmetryBreakingKeepsTheOptimum) {
  for (uint64_t seed = 300; seed < 306; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const TaskGraph graph = identical_devices_graph(seed);
    const Plan free = plan_milp(graph, quiet_milp());
    for (SymmetryBreaking symmetry : {SymmetryBreaking::kTaskCount, SymmetryBreaking::kUtilisation,
                                      SymmetryBreaking::kBatchItems}) {
      MilpOptions options = quiet_milp();
      options.symmetry = symmetry;
      const Plan ordered = plan_milp(graph, options);
      EXPECT_EQ(ordered.notes["symmetric_devices"], 3);
      EXPECT_TRUE(close(ordered.makespan, free.makespan))
          << symmetry_breaking_name(symmetry) << ": " << ordered.makespan << " vs "
          << free.makespan;
      expect_solver_matches_simulator(ordered, graph);
    }
  }
}

TEST(Milp, SymmetryBreakingSkipsDevicesThatDiffer) {
  const TaskGraph graph = random_task_graph(5, small_graph(5));
  MilpOptions options = quiet_milp();
  options.symmetry = SymmetryBreaking::kTaskCount;
  EXPECT_EQ(plan_milp(graph, options).notes["symmetric_devices"], 0);
}

TEST(Milp, ParsesSymmetryBreakingNames) {
  EXPECT_EQ(parse_symmetry_breaking("tasks"), SymmetryBreaking::kTaskCount);
  EXPECT_EQ(parse_symmetry_breaking("time"), SymmetryBreaking::kUtilisation);
  EXPECT_EQ(parse_symmetry_breaking("batch"), SymmetryBreaking::kBatchItems);
  EXPECT_THROW(parse_symmetry_breaking("random"), Error);
}

TEST(Milp, TimeLimitReturnsTheIncumbentMarkedAsSuch) {
  RandomTaskGraphOptions options;
  options.tasks = 60;
  options.devices = 3;
  options.edge_probability = 0.08;
  const TaskGraph graph = random_task_graph(7, options);
  MilpOptions limited = quiet_milp();
  limited.time_limit_seconds = 0.5;
  const Plan plan = plan_milp(graph, limited);
  EXPECT_EQ(plan.notes["status"], "time_limit");
  EXPECT_GT(plan.notes["gap"].get<double>(), 0.0);
  EXPECT_LE(plan.notes["bound"].get<double>(), plan.makespan);
  EXPECT_NO_THROW(validate_plan(plan, graph));
}

TEST(Milp, TooLittleTimeReturnsTheWarmStart) {
  // Below a quarter second CBC is not called: the list schedule is the answer, marked as an
  // incumbent, with the heads-and-tails bound.
  RandomTaskGraphOptions options;
  options.tasks = 40;
  options.devices = 3;
  options.edge_probability = 0.1;
  const TaskGraph graph = random_task_graph(11, options);
  MilpOptions limited = quiet_milp();
  limited.time_limit_seconds = 0.01;
  const MilpSolution solution = solve_milp(graph, limited);
  ASSERT_TRUE(solution.has_solution);
  EXPECT_LT(solution.seconds, 0.25);
  EXPECT_LE(solution.bound, solution.objective);
  const Plan plan = plan_milp(graph, limited);
  EXPECT_NO_THROW(validate_plan(plan, graph));
  EXPECT_NEAR(plan.makespan, solution.objective, 1e-9 * solution.objective);
}

TEST(Milp, InfeasibleMemoryIsAClearError) {
  // Each task fits on either device alone, but both devices together cannot hold all four.
  RandomTaskGraphOptions options;
  options.tasks = 4;
  options.devices = 2;
  TaskGraph graph = random_task_graph(11, options);
  for (Task& task : graph.tasks) task.weight_bytes = 100;
  for (Device& device : graph.machine.devices) device.memory_bytes = 150;
  try {
    plan_milp(graph, quiet_milp());
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("memory"), std::string::npos) << error.what();
  }
}

TEST(Milp, MemoryLimitsAreRespected) {
  RandomTaskGraphOptions options;
  options.tasks = 6;
  options.devices = 2;
  TaskGraph graph = random_task_graph(12, options);
  for (Task& task : graph.tasks) task.weight_bytes = 100;
  graph.machine.devices[0].memory_bytes = 300;
  graph.machine.devices[1].memory_bytes = 300;
  const Plan plan = plan_milp(graph, quiet_milp());
  int on_first = 0;
  for (const PlannedTask& placed : plan.tasks) on_first += placed.worker == 0 ? 1 : 0;
  EXPECT_EQ(on_first, 3);
}

TEST(Milp, BatchedGraphsAreThroughputPlans) {
  RandomTaskGraphOptions options;
  options.tasks = 3;
  options.devices = 2;
  options.edge_probability = 0.5;
  const TaskGraph per_sample = random_task_graph(13, options);
  const TaskGraph batched = batch_task_graph(per_sample, 8, default_slice_sizes(8));
  const Plan plan = plan_milp(batched, quiet_milp());
  EXPECT_EQ(plan.objective, "throughput");
  EXPECT_EQ(plan.batch, 8);
  EXPECT_NEAR(plan.notes["throughput"].get<double>(), 8 / plan.makespan, 1e-9);
  expect_solver_matches_simulator(plan, batched);
  EXPECT_LE(plan.makespan, plan_heft(batched).makespan * (1 + 1e-9));
}

TEST(Milp, SupportedSharesForceWholeBatchesWhereAsked) {
  // One node, three one-sample slices, two equal devices. Unrestricted, the devices share
  // the slices 2 + 1; when the first device only takes whole batches of 3, one device runs all.
  const std::string text = R"({"devices": [{"name": "a", "batch_sizes": [3]},
                                          {"name": "b", "batch_sizes": [1, 3]}],
                              "bandwidth": [[0, 1e9], [1e9, 0]],
                              "tasks": [{"name": "n@0:1", "time": [1, 1], "batch_begin": 0, "batch_end": 1, "weight_group": 0, "node": 0},
                                        {"name": "n@1:2", "time": [1, 1], "batch_begin": 1, "batch_end": 2, "weight_group": 0, "node": 0},
                                        {"name": "n@2:3", "time": [1, 1], "batch_begin": 2, "batch_end": 3, "weight_group": 0, "node": 0}],
                              "edges": []})";
  TaskGraph graph = task_graph_from_json(nlohmann::json::parse(text), "shares.json");
  EXPECT_NEAR(plan_milp(graph, quiet_milp()).makespan, 2.0, 1e-9);
  MilpOptions shares = quiet_milp();
  shares.supported_shares = true;
  EXPECT_NEAR(plan_milp(graph, shares).makespan, 3.0, 1e-9);
}

TEST(Milp, RestrictionsFixDevicesAndReleaseTimes) {
  RandomTaskGraphOptions options;
  options.tasks = 3;
  options.devices = 2;
  const TaskGraph graph = random_task_graph(14, options);
  MilpRestrictions restrictions;
  restrictions.allowed.assign(3, {true, true});
  restrictions.allowed[0] = {false, true};
  restrictions.release.assign(3, {0.5, 0.5});
  const MilpSolution solution = solve_milp(graph, quiet_milp(), restrictions);
  ASSERT_TRUE(solution.has_solution);
  EXPECT_EQ(solution.device[0], 1);
  for (double start : solution.start) EXPECT_GE(start, 0.5 - 1e-12);
}

TEST(Milp, RegisteredInTheSchedulerDispatch) {
  const TaskGraph graph = random_task_graph(15, small_graph(15));
  ScheduleOptions options;
  options.symmetry = "tasks";
  const Plan exact = schedule(graph, "milp", options);
  EXPECT_EQ(exact.strategy, "milp");
  EXPECT_EQ(exact.notes["symmetry"], "tasks");
  const Plan split = schedule(graph, "milp-split", options);
  EXPECT_EQ(split.strategy, "milp-split");
  const auto bound = lower_bound_function();
  ASSERT_TRUE(bound.has_value());
  EXPECT_LE((*bound)(graph, options).makespan, exact.makespan * (1 + 1e-9));
  options.symmetry = "sideways";
  EXPECT_THROW(schedule(graph, "milp", options), Error);
}

}  // namespace
}  // namespace cleave
