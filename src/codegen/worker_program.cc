// Deriving per-worker node orders and cross-worker values from a model plan.
#include "codegen/worker_program.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

namespace cleave {

namespace {

// Records task `task` (its node, sample and worker), refusing what a generated program cannot
// run: a task of several samples, a node run twice for one sample, and a worker that goes back
// to an earlier sample (its one arena then holds one sample at a time).
void add_task(const Graph& graph, const ModelPlan& plan, int task, WorkerProgram& program) {
  const Task& entry = plan.tasks.tasks.at(task);
  const NodeId node = entry.node;
  if (node < 0 || static_cast<std::size_t>(node) >= graph.node_capacity() ||
      graph.node(node).removed) {
    throw Error(fmt::format("plan task '{}' names no node of the model", entry.name));
  }
  const int64_t sample = entry.batch_begin;
  if (program.samples == 1 && sample != 0) {
    throw Error(
        fmt::format("plan task '{}' runs sample {}; code generation takes plans of one sample",
                    entry.name, sample));
  }
  if (sample < 0 || sample >= program.samples || entry.batch_end != sample + 1) {
    throw Error(fmt::format(
        "plan task '{}' runs samples [{}, {}) of {}; generated programs take tasks of one sample "
        "each",
        entry.name, entry.batch_begin, entry.batch_end, program.samples));
  }
  std::vector<int>& worker_of = program.sample_worker[static_cast<std::size_t>(sample)];
  if (worker_of[node] >= 0) {
    throw Error(fmt::format(
        "node {} runs in more than one task{} (a cloned plan); code generation takes plans that "
        "run each node once",
        graph.describe(node), program.samples > 1 ? fmt::format(" for sample {}", sample) : ""));
  }
  const int worker = plan.plan.tasks.at(task).worker;
  std::vector<SampleTask>& tasks = program.stream_order.at(static_cast<std::size_t>(worker));
  if (!tasks.empty() && tasks.back().sample > sample) {
    throw Error(fmt::format(
        "worker {} runs task '{}' of sample {} after a task of sample {}; generated programs run "
        "each worker's samples one after another (pipelined stages and data-parallel plans "
        "do, hyperclusters interleave them)",
        worker, entry.name, sample, tasks.back().sample));
  }
  worker_of[node] = worker;
  tasks.push_back({node, static_cast<int>(sample)});
}

// Sample `sample` runs as sample 0 does with its workers renamed: the same nodes in the same
// order on each, so sample 0's arena layout holds for it on whichever rank runs it.
void check_like_sample_zero(const Graph& graph, const WorkerProgram& program, int sample) {
  std::vector<std::vector<NodeId>> order(program.workers);
  for (int w = 0; w < program.workers; ++w) {
    for (const SampleTask& task : program.stream_order[w])
      if (task.sample == sample) order[w].push_back(task.node);
  }
  std::vector<bool> taken(program.workers, false);
  for (int w = 0; w < program.workers; ++w) {
    if (program.order[w].empty()) continue;
    const int renamed = program.sample_worker[sample][program.order[w].front()];
    if (taken[renamed] || order[renamed] != program.order[w]) {
      throw Error(fmt::format(
          "sample {} runs {} on worker {} and the nodes around it otherwise than sample 0 does "
          "on worker {}; generated programs take plans whose samples differ only in which "
          "workers run them",
          sample, graph.describe(program.order[w].front()), renamed, w));
    }
    taken[renamed] = true;
  }
}

}  // namespace

WorkerProgram worker_program(const Graph& graph, const ModelPlan& plan) {
  WorkerProgram program;
  program.workers = static_cast<int>(plan.plan.order.size());
  program.threads_per_worker = plan.threads_per_worker;
  program.strategy = plan.plan.strategy;
  program.samples = static_cast<int>(std::max<int64_t>(1, plan.plan.batch));
  program.stream_order.resize(program.workers);
  program.sample_worker.assign(program.samples, std::vector<int>(graph.node_capacity(), -1));
  for (int task : execution_order(plan.plan, plan.tasks)) add_task(graph, plan, task, program);
  for (int sample = 0; sample < program.samples; ++sample) {
    for (NodeId node : graph.node_ids()) {
      if (program.sample_worker[sample][node] >= 0) continue;
      throw Error(fmt::format("the plan does not run node {}{}", graph.describe(node),
                              program.samples > 1 ? fmt::format(" for sample {}", sample) : ""));
    }
  }
  program.worker_of_node = program.sample_worker.front();
  program.order.resize(program.workers);
  program.position_of_node.assign(graph.node_capacity(), -1);
  for (int w = 0; w < program.workers; ++w) {
    for (const SampleTask& task : program.stream_order[w]) {
      if (task.sample != 0) continue;
      program.position_of_node[task.node] = static_cast<int>(program.order[w].size());
      program.order[w].push_back(task.node);
    }
  }
  for (int sample = 1; sample < program.samples; ++sample)
    check_like_sample_zero(graph, program, sample);
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

std::string sample_expression(const SampleSteps& steps, const std::string& index) {
  std::string text = steps.stride == 1 ? index : fmt::format("{} * {}", steps.stride, index);
  return steps.first == 0 ? text : fmt::format("{} + {}", steps.first, text);
}

SampleSteps sample_steps(const std::vector<int>& samples, const std::string& what) {
  SampleSteps steps;
  steps.count = static_cast<int>(samples.size());
  if (samples.empty()) return steps;
  steps.first = samples[0];
  steps.stride = samples.size() > 1 ? samples[1] - samples[0] : 1;
  for (std::size_t k = 1; k < samples.size(); ++k) {
    if (samples[k] - samples[k - 1] == steps.stride && steps.stride > 0) continue;
    throw Error(fmt::format(
        "{} runs sample {} after sample {}, not {}: generated programs loop over evenly spaced "
        "samples (pipelined stages run all of them, data-parallel workers every n-th)",
        what, samples[k], samples[k - 1], samples[k - 1] + steps.stride));
  }
  return steps;
}

SampleSteps worker_samples(const Graph& graph, const WorkerProgram& program, int w,
                           std::vector<NodeId>& nodes) {
  nodes.clear();
  std::vector<int> samples;
  std::vector<NodeId> current;
  const auto finish = [&] {
    if (samples.size() == 1) {
      nodes = current;
    } else if (current != nodes) {
      throw Error(fmt::format(
          "worker {} runs sample {} with other steps than sample {} (first {} against {}); "
          "generated programs loop over a worker's samples, each running the same steps",
          w, samples.back(), samples.front(),
          current.empty() ? std::string("none") : graph.describe(current.front()),
          nodes.empty() ? std::string("none") : graph.describe(nodes.front())));
    }
    current.clear();
  };
  for (const SampleTask& task : program.stream_order.at(static_cast<std::size_t>(w))) {
    if (samples.empty() || samples.back() != task.sample) {
      if (!samples.empty()) finish();
      samples.push_back(task.sample);
    }
    current.push_back(task.node);
  }
  if (!samples.empty()) finish();
  return sample_steps(samples, fmt::format("worker {}", w));
}

std::string identifier_for(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id.front()))) id = "_" + id;
  return id;
}

}  // namespace cleave
