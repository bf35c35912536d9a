// Random DAGs: edges only from lower to higher index, so every graph is acyclic by construction.
#include "plan/random_task_graph.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "ir/graph.h"

namespace cleave {

TaskGraph random_task_graph(uint64_t seed, const RandomTaskGraphOptions& options) {
  if (options.tasks < 0 || options.devices < 1 || !(options.min_time >= 0) ||
      !(options.max_time >= options.min_time) || !(options.min_speed > 0) ||
      !(options.bandwidth > 0)) {
    throw Error(
        "random task graph: need tasks >= 0, devices >= 1, 0 <= min_time <= max_time, "
        "a positive min_speed and bandwidth");
  }
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto devices = static_cast<std::size_t>(options.devices);
  TaskGraph graph;
  graph.machine.name = fmt::format("random machine (seed {})", seed);
  std::vector<double> speed(devices);
  for (std::size_t device = 0; device < devices; ++device) {
    Device info;
    info.name = fmt::format("d{}", device);
    info.kind = fmt::format("kind{}", device);
    speed[device] = options.min_speed + (1.0 - options.min_speed) * unit(random);
    info.speed = speed[device];
    graph.machine.devices.push_back(info);
  }
  graph.machine.bandwidth.assign(devices, std::vector<double>(devices, 0.0));
  graph.machine.latency.assign(devices, std::vector<double>(devices, 0.0));
  for (std::size_t from = 0; from < devices; ++from) {
    for (std::size_t to = 0; to < devices; ++to) {
      if (from == to) continue;
      graph.machine.bandwidth[from][to] = options.bandwidth * (0.5 + unit(random));
      graph.machine.latency[from][to] = options.latency;
    }
  }
  const double mean_time = 0.5 * (options.min_time + options.max_time);
  double total_weights = 0;
  for (int index = 0; index < options.tasks; ++index) {
    Task task;
    task.name = fmt::format("t{}", index);
    const double reference =
        options.min_time + (options.max_time - options.min_time) * unit(random);
    for (std::size_t device = 0; device < devices; ++device) {
      // Each device is better at some operations than its speed suggests: +-30% per task.
      task.time.push_back(reference / speed[device] * (0.7 + 0.6 * unit(random)));
    }
    if (options.unrunnable_probability > 0 && devices > 1) {
      const std::size_t keep = std::uniform_int_distribution<std::size_t>(0, devices - 1)(random);
      for (std::size_t device = 0; device < devices; ++device) {
        if (device != keep && unit(random) < options.unrunnable_probability) {
          task.time[device] = std::numeric_limits<double>::infinity();
        }
      }
    }
    task.output_bytes = std::round(2.0 * unit(random) * options.communication_ratio * mean_time *
                                   options.bandwidth);
    task.weight_bytes = std::round(1e6 * unit(random));
    total_weights += task.weight_bytes;
    graph.tasks.push_back(std::move(task));
  }
  for (int from = 0; from < options.tasks; ++from) {
    for (int to = from + 1; to < options.tasks; ++to) {
      if (unit(random) < options.edge_probability) graph.edges.emplace_back(from, to);
    }
  }
  if (options.memory_fraction > 0) {
    for (Device& device : graph.machine.devices) {
      device.memory_bytes = std::max(1.0, options.memory_fraction * total_weights);
    }
  }
  return graph;
}

}  // namespace cleave
