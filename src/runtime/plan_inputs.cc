// Resolving a plan's task inputs: coverage of the graph, cloned producers, deadlock-free reads.
#include "runtime/plan_inputs.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace cleave {

int output_index(const Graph& graph, ValueId value) {
  const auto& outputs = graph.node(graph.value(value).producer).outputs;
  return static_cast<int>(std::find(outputs.begin(), outputs.end(), value) - outputs.begin());
}

PlanInputs resolve_plan_inputs(const Graph& graph, const TaskGraph& tasks, const Plan& plan) {
  validate_plan(plan, tasks);
  PlanInputs result;
  const std::size_t count = tasks.tasks.size();
  for (std::size_t t = 0; t < count; ++t) {
    const Task& task = tasks.tasks[t];
    if (task.node < 0 || static_cast<std::size_t>(task.node) >= graph.node_capacity() ||
        graph.node(task.node).removed) {
      throw Error(fmt::format("plan task '{}' refers to node {}, which the graph does not have",
                              task.name, task.node));
    }
    if (task.batch_end != task.batch_begin + 1) {
      throw Error(fmt::format(
          "plan task '{}' covers samples [{}, {}); the executor runs one sample per task",
          task.name, task.batch_begin, task.batch_end));
    }
    result.tasks_of[{task.node, static_cast<int>(task.batch_begin)}].push_back(static_cast<int>(t));
    result.samples = std::max(result.samples, static_cast<int>(task.batch_end));
  }
  for (NodeId node : graph.node_ids()) {
    for (int sample = 0; sample < result.samples; ++sample) {
      if (!result.tasks_of.count({node, sample})) {
        throw Error(
            fmt::format("plan does not run node {} for sample {}", graph.describe(node), sample));
      }
    }
  }
  result.worker.assign(count, -1);
  result.position.assign(count, 0);
  for (std::size_t w = 0; w < plan.order.size(); ++w) {
    for (std::size_t i = 0; i < plan.order[w].size(); ++i) {
      result.worker[plan.order[w][i]] = static_cast<int>(w);
      result.position[plan.order[w][i]] = static_cast<int>(i);
    }
  }
  const std::set<std::pair<int, int>> edges(tasks.edges.begin(), tasks.edges.end());
  const auto runs_before = [&](int producer, int consumer) {
    return result.worker[producer] == result.worker[consumer] &&
           result.position[producer] < result.position[consumer];
  };
  result.inputs.resize(count);
  for (std::size_t t = 0; t < count; ++t) {
    const int consumer = static_cast<int>(t);
    const int sample = static_cast<int>(tasks.tasks[t].batch_begin);
    for (ValueId input : graph.node(tasks.tasks[t].node).inputs) {
      TaskInput source = classify_input(graph, input);
      if (source.kind == TaskInput::Kind::kTask) {
        // A copy later on this worker would never be ready in time.
        const auto& candidates = result.tasks_of.at({graph.value(input).producer, sample});
        int chosen = candidates.front();
        for (int candidate : candidates) {
          if (edges.count({candidate, consumer})) chosen = candidate;
        }
        for (int candidate : candidates) {
          if (runs_before(candidate, consumer)) chosen = candidate;
        }
        // validate_plan checked the task graph's edges; a read outside them must come from
        // earlier on the same worker, or the run could deadlock.
        if (!edges.count({chosen, consumer}) && !runs_before(chosen, consumer)) {
          throw Error(fmt::format(
              "plan task '{}' reads task '{}', but the task graph has no edge between them and "
              "it does not run earlier on the same worker",
              tasks.tasks[t].name, tasks.tasks[chosen].name));
        }
        source.task = chosen;
        source.output = output_index(graph, input);
      }
      result.inputs[t].push_back(source);
    }
  }
  return result;
}

}  // namespace cleave
