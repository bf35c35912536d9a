// Deriving per-worker node orders and cross-worker values from a model plan.
#include "codegen/worker_program.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

namespace cleave {

WorkerProgram worker_program(const Graph& graph, const ModelPlan& plan) {
  WorkerProgram program;
  program.workers = static_cast<int>(plan.plan.order.size());
  program.threads_per_worker = plan.threads_per_worker;
  program.strategy = plan.plan.strategy;
  if (plan.plan.batch > 1) {
    throw Error(
        fmt::format("the plan runs {} samples at once; code generation takes plans of "
                    "one sample",
                    plan.plan.batch));
  }
  program.order.resize(program.workers);
  program.worker_of_node.assign(graph.node_capacity(), -1);
  program.position_of_node.assign(graph.node_capacity(), -1);
  for (int task : execution_order(plan.plan, plan.tasks)) {
    const Task& entry = plan.tasks.tasks.at(task);
    const NodeId node = entry.node;
    if (node < 0 || static_cast<std::size_t>(node) >= graph.node_capacity() ||
        graph.node(node).removed) {
      throw Error(fmt::format("plan task '{}' names no node of the model", entry.name));
    }
    if (entry.batch_begin != 0) {
      throw Error(
          fmt::format("plan task '{}' runs sample {}; code generation takes plans of one "
                      "sample",
                      entry.name, entry.batch_begin));
    }
    if (program.worker_of_node[node] >= 0) {
      throw Error(
          fmt::format("node {} runs in more than one task (a cloned plan); code "
                      "generation takes plans that run each node once",
                      graph.describe(node)));
    }
    const int worker = plan.plan.tasks.at(task).worker;
    program.worker_of_node[node] = worker;
    program.position_of_node[node] = static_cast<int>(program.order[worker].size());
    program.order[worker].push_back(node);
  }
  for (NodeId node : graph.node_ids()) {
    if (program.worker_of_node[node] < 0)
      throw Error(fmt::format("the plan does not run node {}", graph.describe(node)));
  }
  for (int w = 0; w < program.workers; ++w) {
    const Device& device = plan.tasks.machine.devices.at(w);
    program.cores.push_back(device.cores);
  }
  program.remote_readers.resize(graph.value_capacity());
  for (NodeId node : graph.node_ids()) {
    for (ValueId input : graph.node(node).inputs) {
      if (input == kNoValue || graph.value(input).producer < 0) continue;
      const int from = program.worker_of_node[graph.value(input).producer];
      const int to = program.worker_of_node[node];
      auto& readers = program.remote_readers[input];
      if (from != to && std::find(readers.begin(), readers.end(), to) == readers.end())
        readers.push_back(to);
    }
  }
  for (auto& readers : program.remote_readers) std::sort(readers.begin(), readers.end());
  return program;
}

std::string identifier_for(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id.front()))) id = "_" + id;
  return id;
}

}  // namespace cleave
