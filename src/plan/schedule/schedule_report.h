// What `cleave schedule` reports about a plan: its timeline per device, and the lower bound.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan/plan.h"
#include "plan/schedule/schedulers.h"
#include "plan/simulator.h"
#include "plan/task_graph.h"

namespace cleave {

/// The planner name that asks for the lower bound alone.
inline constexpr const char* kLowerBoundAlgo = "lower-bound";

/// The planners' names, and the lower bound's when it is built in, comma-separated.
std::string known_algorithms();

/// A lower bound on the makespan, or why there is none.
struct ScheduleBound {
  std::optional<double> seconds;
  std::string problem;     ///< Why there is none.
  bool timed_out = false;  ///< The best bound found within --time-limit.
};

/// The lower bound of `graph` (a failure is kept as `problem`, not thrown).
ScheduleBound compute_schedule_bound(const TaskGraph& graph, const ScheduleOptions& options);

/// What was scheduled, and where the plan and chart went, for the report.
struct ScheduleSetup {
  std::string task_graph;  ///< The input file.
  std::string algo;
  std::string objective;
  int64_t batch = 1;
  bool batched = false;
  std::size_t per_sample_tasks = 0;
  std::string plan_path;
  std::string gantt_path;
};

/// The lower-bound-only report (`--algo lower-bound`), as JSON and as text.
nlohmann::json lower_bound_json(const ScheduleSetup& setup, const ScheduleBound& bound);
std::string lower_bound_text(const ScheduleSetup& setup, const TaskGraph& graph,
                             const ScheduleBound& bound);

/// The plan's report: makespan or throughput, solve time, bound, transfers, and per device
/// its tasks, busy and idle time and weights; as JSON and as text.
nlohmann::json schedule_json(const ScheduleSetup& setup, const TaskGraph& graph, const Plan& plan,
                             const Simulation& simulation, const ScheduleBound& bound);
std::string schedule_text(const ScheduleSetup& setup, const TaskGraph& graph, const Plan& plan,
                          const Simulation& simulation, const ScheduleBound& bound);

}  // namespace cleave
