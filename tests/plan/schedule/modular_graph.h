// Test helpers: stacked random modules (RWNN-like) joined by one or more channels.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "plan/random_task_graph.h"
#include "plan/task_graph.h"

namespace cleave::testing {

struct ModularGraphOptions {
  int modules = 3;
  int body = 3;                   ///< Random tasks per module besides its input/output tasks.
  double edge_probability = 0.2;  ///< Erdos-Renyi edges i -> j (i < j) inside a body.
  int channels = 1;               ///< Edges from one module to the next.
  bool articulation = false;      ///< With one channel: modules share their joining task.
  int devices = 3;
  double communication_ratio = 0.5;
};

/// Each module: `channels` input tasks (each body task without a producer reads one), an
/// Erdos-Renyi body, `channels` output tasks (each body task without a consumer feeds one);
/// output k of a module feeds input k of the next (or, with `articulation`, is it). Times,
/// bytes and the machine come from random_task_graph with the same seed.
inline TaskGraph modular_graph(uint64_t seed, const ModularGraphOptions& options) {
  const int channels = options.channels;
  const bool shared = options.articulation && channels == 1;
  // Task layout per module: inputs (unless shared with the previous outputs), body, outputs.
  std::vector<std::vector<int>> inputs(options.modules), bodies(options.modules),
      outputs(options.modules);
  int count = 0;
  for (int module = 0; module < options.modules; ++module) {
    if (shared && module > 0) {
      inputs[module] = outputs[module - 1];
    } else {
      for (int k = 0; k < channels; ++k) inputs[module].push_back(count++);
    }
    for (int k = 0; k < options.body; ++k) bodies[module].push_back(count++);
    for (int k = 0; k < channels; ++k) outputs[module].push_back(count++);
  }
  RandomTaskGraphOptions random;
  random.tasks = count;
  random.devices = options.devices;
  random.edge_probability = 0;
  random.communication_ratio = options.communication_ratio;
  TaskGraph graph = random_task_graph(seed, random);
  std::mt19937_64 engine(seed * 7919 + 17);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto pick = [&](const std::vector<int>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(engine)];
  };
  for (int module = 0; module < options.modules; ++module) {
    const std::vector<int>& body = bodies[module];
    std::vector<bool> has_producer(body.size(), false), has_consumer(body.size(), false);
    for (std::size_t i = 0; i < body.size(); ++i) {
      for (std::size_t j = i + 1; j < body.size(); ++j) {
        if (unit(engine) < options.edge_probability) {
          graph.edges.emplace_back(body[i], body[j]);
          has_producer[j] = has_consumer[i] = true;
        }
      }
    }
    std::vector<bool> input_used(channels, false), output_used(channels, false);
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (!has_producer[i]) {
        const int k = static_cast<int>(std::uniform_int_distribution<int>(0, channels - 1)(engine));
        graph.edges.emplace_back(inputs[module][k], body[i]);
        input_used[k] = true;
      }
      if (!has_consumer[i]) {
        const int k = static_cast<int>(std::uniform_int_distribution<int>(0, channels - 1)(engine));
        graph.edges.emplace_back(body[i], outputs[module][k]);
        output_used[k] = true;
      }
    }
    // Every input and output task touches the body.
    for (int k = 0; k < channels; ++k) {
      if (!input_used[k]) graph.edges.emplace_back(inputs[module][k], pick(body));
      if (!output_used[k]) graph.edges.emplace_back(pick(body), outputs[module][k]);
    }
    if (module + 1 < options.modules && !shared) {
      for (int k = 0; k < channels; ++k) {
        graph.edges.emplace_back(outputs[module][k], inputs[module + 1][k]);
      }
    }
  }
  return graph;
}

}  // namespace cleave::testing
