// The pipelined-stage executor: graph_to_stages' program run by execute_stream behind the contract.
#include "stream/stage_executor.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "support/error.h"

namespace cleave {

namespace {

// The program's items: each sample's graph inputs in graph order, as graph_to_stages pops them.
std::vector<Tensor> input_items(const Graph& graph, const std::vector<SampleInputs>& inputs) {
  std::vector<Tensor> items;
  for (std::size_t s = 0; s < inputs.size(); ++s) {
    try {
      check_inputs(graph, inputs[s]);
    } catch (const Error& e) {
      if (inputs.size() == 1) throw;
      throw Error(fmt::format("sample {}: {}", s, e.what()));
    }
    for (ValueId id : graph.inputs()) {
      const Value& v = graph.value(id);
      const auto it = inputs[s].find(v.name);
      items.push_back(it != inputs[s].end() ? it->second : Tensor::from_data(*v.initializer));
    }
  }
  return items;
}

// An output item as the graph output it is (items drop a leading dim of 1), in a buffer of its
// own: the item may be a view into a stage executor's result.
Tensor owned_output(const Value& value, const Tensor& item) {
  std::vector<int64_t> shape = item.shape();
  if (value.shape.rank_known && value.shape.is_static() &&
      value.shape.element_count() == static_cast<int64_t>(item.element_count())) {
    shape = value.shape.sizes();
  }
  Tensor out = Tensor::allocate(item.dtype(), shape);
  std::memcpy(out.raw(), item.raw(), item.byte_size());
  return out;
}

// One event per firing, its wait the idle time since the worker's previous firing ended.
Trace trace_of(const StreamRunResult& result) {
  Trace trace;
  std::map<int, double> free_at;
  for (const StreamRunResult::Firing& firing : result.firings) {
    Trace::Event event;
    event.task = firing.node;
    event.worker = firing.worker;
    event.start = firing.start;
    event.end = firing.end;
    event.wait = std::max(0.0, firing.start - free_at[firing.worker]);
    free_at[firing.worker] = firing.end;
    trace.makespan = std::max(trace.makespan, firing.end);
    trace.events.push_back(event);
  }
  return trace;
}

}  // namespace

void check_stage_options(const Graph& graph, const StageExecutorOptions& options) {
  const auto nodes = static_cast<int64_t>(graph.node_count());
  if (options.stages < 1 || options.stages > nodes) {
    throw Error(fmt::format(
        "{} {}: a pipeline needs 1 to {} stages (one node at least each; the model has {} nodes)",
        options.stages_option, options.stages, nodes, nodes));
  }
  if (options.workers < 1) {
    throw Error(fmt::format("pipeline: {} workers (need at least 1)", options.workers));
  }
  if (options.samples < 1) {
    throw Error(fmt::format("{} {}: a pipeline streams at least 1 sample per run",
                            options.samples_option, options.samples));
  }
}

StageExecutor::StageExecutor(const Graph& graph, const StageExecutorOptions& options)
    : graph_(graph), samples_(options.samples), threads_(options.stage_options.threads) {
  check_stage_options(graph, options);
  staged_ = graph_to_stages(graph_, options.stages, graph.name.empty() ? "model" : graph.name,
                            options.node_cost);
  program_ = StreamProgram{staged_.root, fmt::format("pipeline of {} stages", options.stages)};
  verify_stream(program_.root, program_.origin);
  // A worker beyond the stages would have nothing to fire.
  plan_.workers = std::min(options.workers, options.stages);
  // Cut values go from stage to stage plain; each stage's kernels still see them in the
  // layout the sequential run gives them, so that the outputs are its bits.
  ExecutorOptions stage_options = options.stage_options;
  if (stage_options.blocked_layouts && options.stages > 1)
    stage_options.layout_hand_off = std::make_shared<LayoutHandOff>(graph_);
  for (int k = 0; k < options.stages; ++k) {
    plan_.placement.worker.push_back(k % plan_.workers);
    plan_.executors.push_back(
        std::make_shared<Executor>(*staged_.root.streams[k].graph, stage_options));
  }
  plan_.node_cost = staged_.stage_cost;
  reset_stats();
  stats_.tasks = options.stages;
}

std::vector<std::vector<Tensor>> StageExecutor::run(const std::vector<SampleInputs>& inputs) {
  if (inputs.empty()) throw Error("pipeline: a run needs at least one sample");
  const std::vector<Tensor> items = input_items(graph_, inputs);
  StreamRunOptions options;
  options.trace = true;
  options.mixed_items = true;  // graph inputs and cut values differ in type
  options.capacity_factor = capacity_factor_;
  const StreamSetup setup = prepare_stream(program_, items, options.mixed_items);
  for (const auto& observer : observers_) observer->on_run_begin(plan_.workers, stages());
  StreamRunResult result;
  try {
    result = execute_stream(program_, setup, items, plan_, options);
  } catch (...) {
    for (const auto& observer : observers_) observer->on_run_end(0);
    throw;
  }
  trace_ = trace_of(result);
  for (const auto& observer : observers_) {
    for (const Trace::Event& event : trace_.events) observer->on_task_end(event);
    observer->on_run_end(trace_.makespan);
  }
  const std::vector<ValueId>& names = graph_.outputs();
  if (result.outputs.size() != inputs.size() * names.size()) {
    throw Error(fmt::format("{}: {} output items for {} samples of {} outputs", program_.origin,
                            result.outputs.size(), inputs.size(), names.size()));
  }
  std::vector<std::vector<Tensor>> outputs(inputs.size());
  for (std::size_t s = 0; s < inputs.size(); ++s) {
    for (std::size_t o = 0; o < names.size(); ++o) {
      outputs[s].push_back(
          owned_output(graph_.value(names[o]), result.outputs[s * names.size() + o]));
    }
  }
  ++stats_.runs;
  last_ = std::move(result);
  return outputs;
}

void StageExecutor::place(const StreamRunOptions& options) {
  // Stage filters carry values of different types: no channel has one item type.
  StreamSetup setup{flatten_stream(program_.root), {}, {}};
  setup.schedule = schedule_stream(setup.graph, program_.origin);
  setup.channel_items.assign(setup.graph.channels.size(), std::nullopt);
  std::vector<std::shared_ptr<Executor>> executors = std::move(plan_.executors);
  plan_ = plan_stream(program_, setup, options);
  plan_.executors = std::move(executors);
  capacity_factor_ = options.capacity_factor;
}

std::vector<Tensor> StageExecutor::run(const SampleInputs& inputs) {
  return run(std::vector<SampleInputs>{inputs}).front();
}

void StageExecutor::reset_stats() {
  stats_.runs = 0;
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
  stats_.implementations.assign(graph_.node_capacity(), "");
}

std::vector<std::string> StageExecutor::task_names() const {
  std::vector<std::string> names;
  for (const Stream& stage : staged_.root.streams) names.push_back(stage.name);
  return names;
}

std::vector<std::string> StageExecutor::worker_names() const {
  std::vector<std::string> names;
  for (int w = 0; w < plan_.workers; ++w) names.push_back(fmt::format("worker {}", w));
  return names;
}

}  // namespace cleave
