// Seeded random task DAGs over random heterogeneous machines, for tests and experiments.
#pragma once

#include <cstdint>

#include "plan/task_graph.h"

namespace cleave {

struct RandomTaskGraphOptions {
  int tasks = 20;
  int devices = 3;
  double edge_probability = 0.2;  ///< Each pair i < j gets an edge i -> j with this probability.
  double min_time = 1e-3;         ///< Reference task time range, seconds (on a speed-1 device).
  double max_time = 10e-3;
  double min_speed = 0.2;  ///< Device speeds drawn from [min_speed, 1]; times divided by speed.
  /// Transfers cost about this many reference task times (mean), so communication matters.
  double communication_ratio = 0.5;
  double bandwidth = 1e9;  ///< Mean link bandwidth, bytes/s; each link varies around it.
  double latency = 0;      ///< Seconds added to every transfer.
  /// Chance that a task cannot run on a device (never on all of them).
  double unrunnable_probability = 0;
  /// Device memory as a fraction of the total weight bytes (0: unlimited memory).
  double memory_fraction = 0;
};

/// Same seed and options, same graph. Task names are "t0", "t1", ...; devices "d0", ...
TaskGraph random_task_graph(uint64_t seed, const RandomTaskGraphOptions& options = {});

}  // namespace cleave
