// Sequential executor: prepares kernels lazily, reuses buffers by liveness, reorders layouts.
#include "runtime/executor.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>

#include "ir/text.h"
#include "runtime/constant_tensor.h"

namespace cleave {

namespace {

// Where each node of `order` reads its inputs: the one worker's tasks are the positions.
std::vector<TaskInput> sources_in_order(const Graph& graph, const Node& node,
                                        const std::vector<std::pair<NodeId, std::size_t>>& slot) {
  std::vector<TaskInput> sources;
  for (ValueId input : node.inputs) {
    TaskInput source = classify_input(graph, input);
    if (source.kind == TaskInput::Kind::kTask) {
      source.task = static_cast<int>(slot[input].first);
      source.output = static_cast<int>(slot[input].second);
    }
    sources.push_back(source);
  }
  return sources;
}

}  // namespace

Executor::Executor(const Graph& graph, ExecutorOptions options)
    : graph_(graph),
      options_(options),
      claim_pool_(options.claim_threads >= 2 ? std::make_unique<ClaimPool>(options.claim_threads)
                                             : nullptr),
      loop_(std::make_unique<TaskLoop>()),
      pool_(options.pool           ? *options.pool
            : options.shared_arena ? BufferPool(options.shared_arena)
                                   : BufferPool()),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  order_ = graph_.topological_order();
  producer_slot_.assign(graph_.value_capacity(), {0, 0});
  for (std::size_t position = 0; position < order_.size(); ++position) {
    const Node& node = graph_.node(order_[position]);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] != kNoValue) producer_slot_[node.outputs[i]] = {position, i};
    }
  }
  TaskLoop& loop = *loop_;
  loop.graph = &graph_;
  loop.threads = options_.threads;
  loop.constants.resize(graph_.value_capacity());
  for (ValueId id : graph_.initializers()) loop.constants[id] = constant_tensor(graph_, id);
  loop.tasks.resize(order_.size());
  tasks_.resize(order_.size());
  for (std::size_t position = 0; position < order_.size(); ++position) {
    LoopTask& task = loop.tasks[position];
    task.node = order_[position];
    task.sources = sources_in_order(graph_, graph_.node(task.node), producer_slot_);
    task.runner =
        make_runner(graph_, task.node, options_.blocked_layouts, options_.convolution_family,
                    claim_pool_.get(), options_.layout_hand_off.get());
    task.runner->set_pack_product_weights(options_.pack_product_weights);
    task.keep.clear();
    for (ValueId output : graph_.node(task.node).outputs)
      task.keep.push_back(graph_.value(output).is_graph_output);
    tasks_[position] = static_cast<int>(position);
  }
  mark_run_time_outputs(loop);
  count_uses(loop);
  if (options_.release_packed_weights) count_packers(loop);
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
}

std::vector<ValueId> Executor::weights_packed_for_good() const {
  return cleave::weights_packed_for_good(*loop_);
}

void Executor::plan_in_place_concats() {
  placement_ = place_concat_inputs(graph_, [this](ValueId value) -> const OutputSpec* {
    const Value& v = graph_.value(value);
    if (v.producer < 0 || v.initializer) return nullptr;
    auto [position, output] = producer_slot_[value];
    const std::vector<OutputSpec>& specs = loop_->tasks[position].runner->specs();
    return output < specs.size() ? &specs[output] : nullptr;
  });
  stats_.concat_inputs_in_place = placement_.values_in_place;
}

std::vector<Tensor> Executor::run(const SampleInputs& given) {
  check_inputs(graph_, given);
  const SampleInputs relaid = options_.layout_hand_off ? relaid_inputs(given) : SampleInputs();
  const SampleInputs& inputs = options_.layout_hand_off ? relaid : given;
  TaskLoop& loop = *loop_;
  // Nodes are timed only when someone reads the times: each clock read costs a little.
  const bool timed = options_.collect_stats || !observers_.empty();
  const auto run_start = std::chrono::steady_clock::now();
  const int tasks = static_cast<int>(order_.size());
  if (options_.collect_stats) trace_.on_run_begin(1, tasks);
  for (const auto& observer : observers_) observer->on_run_begin(1, tasks);
  // Placement follows from the kernels prepared for these input shapes; other shapes run
  // without it once, which prepares their kernels, and plan it again.
  std::string input_shapes = input_shape_signature(inputs);
  const bool in_place =
      options_.in_place_concat && input_shapes == placement_inputs_ && !placement_.empty();
  loop.placement = in_place ? &placement_ : nullptr;
  if (in_place)
    loop.shared.assign(1, std::vector<std::shared_ptr<Buffer>>(graph_.value_capacity()));
  omp_set_num_threads(std::max(1, options_.threads));
  // Once a run repeats the one before (static shapes), the pool follows a static buffer plan.
  pool_.begin_run();
  reset_reads(loop);
  WorkerRun worker;
  worker.order = tasks_;
  worker.pool = &pool_;
  worker.engine = &engine_;
  worker.stream = &stream_;
  worker.inputs = std::span<const SampleInputs>(&inputs, 1);
  worker.start = run_start;
  worker.timed = timed;
  worker.recorder = options_.collect_stats ? &trace_ : nullptr;
  worker.observers = &observers_;
  run_worker_tasks(loop, worker);
  stream_.wait();
  std::vector<Tensor> outputs;
  for (ValueId id : graph_.outputs()) {
    const Value& v = graph_.value(id);
    if (v.initializer) {
      outputs.push_back(to_plain(loop.constants[id], engine_, stream_));
    } else if (v.producer < 0) {
      outputs.push_back(to_plain(inputs.at(v.name), engine_, stream_));
    } else {
      auto [position, output] = producer_slot_[id];
      const Tensor& value = loop.tasks[position].outputs[output];
      if (options_.layout_hand_off && value.is_blocked())
        options_.layout_hand_off->record(v.name, *value.layout());
      outputs.push_back(to_plain(value, engine_, stream_));
    }
  }
  stats_.peak_activation_bytes = pool_.reserved_bytes();
  const BufferPool::RunTimeStats run_time = pool_.run_time_stats();
  stats_.run_time_buffers_made = run_time.made;
  stats_.run_time_buffers_reused = run_time.reused;
  pool_.end_run();
  // The graph outputs held until now go back to the pool, as every other value did.
  for (LoopTask& task : loop.tasks) {
    for (std::size_t k = 0; k < task.outputs.size(); ++k)
      if (task.keep[k]) task.outputs[k] = Tensor();
  }
  loop.shared.clear();  // After end_run: a shared Concat buffer is never planned.
  ++stats_.runs;
  if (timed) {
    const double makespan =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    if (options_.collect_stats) {
      trace_.on_run_end(makespan);
      add_node_seconds(loop, trace_.trace(), stats_);
    }
    for (const auto& observer : observers_) observer->on_run_end(makespan);
  }
  stats_.released_weight_bytes = loop.released_weight_bytes;
  if (input_shapes != stats_inputs_ || stats_.implementations.empty()) {
    stats_.implementations = implementations(loop, graph_.node_capacity());
    stats_inputs_ = input_shapes;
  }
  if (options_.in_place_concat && input_shapes != placement_inputs_) {
    plan_in_place_concats();
    placement_inputs_ = input_shapes;
  }
  return outputs;
}

// Inputs another executor computed blocked come back into that layout, so that the kernels
// reading them are the ones one executor over the whole graph prepares (and compute its bits).
SampleInputs Executor::relaid_inputs(const SampleInputs& inputs) {
  SampleInputs relaid = inputs;
  for (auto& [name, tensor] : relaid) {
    const std::optional<ValueId> id = graph_.find_value(name);
    if (tensor.is_blocked() || tensor.dtype() != DataType::kFloat || !id ||
        !readers_take_blocked(graph_, *id))
      continue;  // A reader would take the blocked bytes for plain ones.
    if (std::optional<dnnl::memory::desc> layout = options_.layout_hand_off->layout_of(name))
      tensor = to_layout(tensor, *layout, engine_, stream_);
  }
  return relaid;
}

std::vector<std::vector<Tensor>> Executor::run(const std::vector<SampleInputs>& inputs) {
  if (inputs.empty()) throw Error("a run needs the inputs of at least one sample");
  std::vector<std::vector<Tensor>> outputs;
  outputs.reserve(inputs.size());
  for (const SampleInputs& sample : inputs) outputs.push_back(run(sample));
  return outputs;
}

void Executor::reset_stats() {
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
  stats_.runs = 0;
}

}  // namespace cleave
