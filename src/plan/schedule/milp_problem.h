// Internal to the MILP planner: the problem after its restrictions, the warm start, bounds, and
// the per-device orders the program's set-up and clean-up share.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

#include "plan/schedule/milp.h"
#include "support/timing.h"

namespace cleave::milp_detail {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

using Clock = std::chrono::steady_clock;

// The problem after applying the restrictions: who may run where, and from when.
/// Roughly the nonzeros of the MILP of `graph`: a precedence row per edge and device pair, each
/// over the producer's devices, and order rows per task pair and device.
double program_nonzeros(const TaskGraph& graph);
/// Beyond it the program takes longer to build than any time limit allows (100 devices made
/// one lower-bound subproblem take 74 s): the warm start, or the closed forms, answer instead.
inline constexpr double kMaxProgramNonzeros = 1e6;

// The linear part of the simulator's message price (plan/simulator.h) where the machine prices
// message ends (Machine::endpoint_bandwidth); all zero where it does not. Seconds.
struct EndPrices {
  bool priced = false;
  std::vector<double> send;          // per task: its worker's copy of its largest value, per device
                                     // that reads it
  std::vector<double> receive;       // per edge: the reader's copy
  std::vector<double> concat;        // per edge: a Concat's copy into its output (else 0)
  std::vector<double> gather_send;   // per task: copies of its gathered model outputs
  std::vector<double> gather_bytes;  // per task: its largest gathered model output (0: none)
};

EndPrices end_prices(const TaskGraph& graph);

// Seconds from the end of `edge`'s producer's computing until its value can be on `to`, where
// its producer runs on `from` and sends it to that one device: latency + the later of the
// sender's copy and the link (the simulator's arrival), or edge_time without priced ends.
double message_seconds(const TaskGraph& graph, const EndPrices& prices, std::size_t edge,
                       std::size_t from, std::size_t to);

struct Problem {
  const TaskGraph* graph = nullptr;
  EndPrices prices;
  std::size_t tasks = 0;
  std::size_t devices = 0;
  std::vector<std::vector<bool>> allowed;
  std::vector<std::vector<double>> ready;  // max(release, device available)
  std::vector<double> memory_left;
  std::vector<int> memory_key;  // weight-sharing key per task
  std::vector<double> key_bytes;
  std::vector<int> topological_position;
};

Problem make_problem(const TaskGraph& graph, const MilpRestrictions& restrictions);

struct Schedule {
  std::vector<int> device;
  std::vector<double> start;
  double makespan = 0;
};

// The warm start: plan/earliest_finish's list scheduling in upward-rank order, appending to
// each device (the order the program's start times then reproduce), within every restriction
// (allowed devices, ready times, memory left per weight group); nullopt when memory or links
// leave some task nowhere to go.
std::optional<Schedule> list_schedule(const Problem& problem);

// An upper bound on the makespan of some optimal schedule when no warm start exists: in a
// schedule without needless idle time, the chain of waits behind the last task visits every
// task and edge at most once after the latest ready time.
double trivial_horizon(const Problem& problem);

// Per task, the earliest it can start (its fastest predecessors, no transfers, its earliest
// ready time) and the least work that must follow it (fastest times along the longest path
// after it): bounds that tighten the LP relaxation at no risk.
struct HeadsAndTails {
  std::vector<double> head;
  std::vector<double> tail;
  std::vector<double> fastest;
  double makespan = 0;  // max of head + fastest + tail
};

HeadsAndTails heads_and_tails(const Problem& problem);

// Devices that swapping leaves the whole problem unchanged; classes of two or more.
std::vector<std::vector<int>> interchangeable_classes(const Problem& problem);

// A task's batch items (its slice size; at least one).
double task_items(const Task& task);

// The quantity symmetry breaking orders interchangeable devices by, for one task there.
double symmetry_metric(SymmetryBreaking symmetry, const Task& task, std::size_t device);

// Renames devices inside each class so the warm start obeys the symmetry-breaking order
// (metric non-increasing along the class).
void order_by_symmetry(Schedule& schedule, const Problem& problem,
                       const std::vector<std::vector<int>>& classes, SymmetryBreaking symmetry);

// Orders tasks on one device from their start times: ties (within rounding) put zero-length
// tasks first, then topological position, which reproduces the solver's order.
std::vector<std::vector<int>> orders_from_starts(const TaskGraph& graph,
                                                 const std::vector<int>& device,
                                                 const std::vector<double>& start);

// The program's timeline of an assignment and its per-device orders: every task as early as
// the program's rows let it start (ready times, the device's previous task, its inputs, the
// priced message ends' linear part), and the makespan they give (the gathers included).
// nullopt if the orders contradict the edges.
std::optional<Schedule> linear_timeline(const Problem& problem, const std::vector<int>& device,
                                        const std::vector<std::vector<int>>& order);

// The same assignment and per-device orders with every task as early as its inputs, its
// device and its ready time allow (the solver leaves slack on tasks off the critical path).
// Returns false, changing nothing, if the orders contradict the edges.
bool left_justify(const Problem& problem, const std::vector<int>& device,
                  std::vector<double>& start);

}  // namespace cleave::milp_detail
