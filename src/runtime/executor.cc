// Sequential executor: prepares kernels lazily, reuses buffers by liveness, reorders layouts.
#include "runtime/executor.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>

#include "ir/text.h"
#include "runtime/constant_tensor.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave {

Executor::Executor(const Graph& graph, ExecutorOptions options)
    : graph_(graph),
      options_(options),
      claim_pool_(options.claim_threads >= 2 ? std::make_unique<ClaimPool>(options.claim_threads)
                                             : nullptr),
      pool_(options.pool ? *options.pool : BufferPool()),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  order_ = graph_.topological_order();
  constants_.resize(graph_.value_capacity());
  for (ValueId id : graph_.initializers()) {
    constants_[id] = constant_tensor(graph_, id);
  }
  runners_.reserve(order_.size());
  for (NodeId id : order_) {
    bool blocked = options_.blocked_layouts;
    for (ValueId output : graph_.node(id).outputs)
      blocked = blocked && blocked_layout_allowed(graph_, output);
    runners_.push_back(std::make_unique<NodeRunner>(
        graph_, id, blocked,
        options_.blocked_layouts ? options_.convolution_family : ConvolutionFamily::kBlocked,
        claim_pool_.get()));
  }
  if (options_.release_packed_weights) {
    packers_left_.assign(graph_.value_capacity(), 0);
    for (NodeId id : order_) {
      for (ValueId input : graph_.node(id).inputs)
        if (input != kNoValue && graph_.value(input).initializer) ++packers_left_[input];
    }
    weights_checked_.assign(order_.size(), false);
  }
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
  producer_slot_.assign(graph_.value_capacity(), {0, 0});
  for (std::size_t position = 0; position < order_.size(); ++position) {
    const Node& node = graph_.node(order_[position]);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] != kNoValue) producer_slot_[node.outputs[i]] = {position, i};
    }
  }
}

void Executor::plan_in_place_concats() {
  placement_ = place_concat_inputs(graph_, [this](ValueId value) -> const OutputSpec* {
    const Value& v = graph_.value(value);
    if (v.producer < 0 || v.initializer) return nullptr;
    auto [position, output] = producer_slot_[value];
    const std::vector<OutputSpec>& specs = runners_[position]->specs();
    return output < specs.size() ? &specs[output] : nullptr;
  });
  stats_.concat_inputs_in_place = placement_.values_in_place;
}

// Reads of a kernel that does not pack never count down: those weights stay.
void Executor::release_packed_weights(std::size_t position) {
  weights_checked_[position] = true;
  const Node& node = graph_.node(order_[position]);
  for (std::size_t i : inputs_packed_for_good(graph_, node, runners_[position]->kernel())) {
    const ValueId input = node.inputs[i];
    if (--packers_left_[input] == 0)
      released_weight_bytes_ += free_loaded_weight(graph_, input, constants_[input]);
  }
}

std::vector<Tensor> Executor::run(const SampleInputs& inputs) {
  check_inputs(graph_, inputs);
  // Nodes are timed only when someone reads the times: each clock read costs a little.
  const bool timed = options_.collect_stats || !observers_.empty();
  const auto run_start = std::chrono::steady_clock::now();
  const auto seconds_since_start = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(t - run_start).count();
  };
  const int tasks = static_cast<int>(order_.size());
  if (options_.collect_stats) trace_.on_run_begin(1, tasks);
  for (const auto& observer : observers_) observer->on_run_begin(1, tasks);
  // Placement follows from the kernels prepared for these input shapes; other shapes run
  // without it once, which prepares their kernels, and plan it again.
  std::string input_shapes = input_shape_signature(inputs);
  bool in_place =
      options_.in_place_concat && input_shapes == placement_inputs_ && !placement_.empty();
  std::vector<std::shared_ptr<Buffer>> shared_buffers;  // Per root ValueId, while filling.
  if (in_place) shared_buffers.resize(graph_.value_capacity());
  std::vector<Tensor> placed_outputs;
  omp_set_num_threads(std::max(1, options_.threads));
  // Once a run repeats the one before (static shapes), the pool follows a static buffer plan.
  pool_.begin_run();
  std::vector<Tensor> values(graph_.value_capacity());
  std::vector<int> remaining_uses(graph_.value_capacity(), 0);
  for (NodeId id : order_) {
    for (ValueId input : graph_.node(id).inputs) {
      if (input != kNoValue) ++remaining_uses[input];
    }
  }
  for (const auto& [name, tensor] : inputs) values[*graph_.find_value(name)] = tensor;

  std::vector<const Tensor*> node_inputs;
  std::vector<bool> constant;
  std::vector<Tensor> node_outputs;
  for (std::size_t position = 0; position < order_.size(); ++position) {
    NodeId id = order_[position];
    const Node& node = graph_.node(id);
    node_inputs.clear();
    constant.clear();
    for (ValueId input : node.inputs) {
      if (input == kNoValue) {
        node_inputs.push_back(nullptr);
        constant.push_back(false);
      } else if (graph_.value(input).initializer) {
        node_inputs.push_back(&constants_[input]);
        constant.push_back(true);
      } else {
        node_inputs.push_back(&values[input]);
        constant.push_back(false);
      }
    }
    bool any_placed =
        in_place && place_outputs(placement_, node.outputs, runners_[position]->specs(),
                                  shared_buffers, pool_, placed_outputs);
    auto start = std::chrono::steady_clock::now();
    runners_[position]->run(node_inputs, constant, node_outputs, pool_, engine_, stream_,
                            options_.threads, any_placed ? &placed_outputs : nullptr);
    placed_outputs.clear();  // Its views would keep shared buffers from the pool.
    if (options_.release_packed_weights && !weights_checked_[position])
      release_packed_weights(position);
    if (timed) {
      stream_.wait();
      const auto end = std::chrono::steady_clock::now();
      if (options_.collect_stats)
        stats_.node_seconds[id] += std::chrono::duration<double>(end - start).count();
      const Trace::Event event{static_cast<int>(position), 0, seconds_since_start(start),
                               seconds_since_start(end), 0};
      if (options_.collect_stats) trace_.on_task_end(event);
      for (const auto& observer : observers_) observer->on_task_end(event);
    }
    for (std::size_t i = 0; i < node.outputs.size(); ++i)
      values[node.outputs[i]] = std::move(node_outputs[i]);
    // Dropping the last reference returns a buffer to the pool for later nodes.
    for (ValueId input : node.inputs) {
      if (input != kNoValue && --remaining_uses[input] == 0 &&
          !graph_.value(input).is_graph_output) {
        values[input] = Tensor();
      }
    }
    for (ValueId output : node.outputs) {
      if (remaining_uses[output] == 0 && !graph_.value(output).is_graph_output)
        values[output] = Tensor();
    }
  }
  stream_.wait();
  std::vector<Tensor> outputs;
  for (ValueId id : graph_.outputs()) {
    const Tensor& value = graph_.value(id).initializer ? constants_[id] : values[id];
    outputs.push_back(to_plain(value, engine_, stream_));
  }
  stats_.peak_activation_bytes = pool_.reserved_bytes();
  pool_.end_run();
  ++stats_.runs;
  if (timed) {
    const double makespan = seconds_since_start(std::chrono::steady_clock::now());
    if (options_.collect_stats) trace_.on_run_end(makespan);
    for (const auto& observer : observers_) observer->on_run_end(makespan);
  }
  if (options_.in_place_concat && input_shapes != placement_inputs_) {
    plan_in_place_concats();
    placement_inputs_ = input_shapes;
  }
  return outputs;
}

std::vector<std::vector<Tensor>> Executor::run(const std::vector<SampleInputs>& inputs) {
  if (inputs.empty()) throw Error("a run needs the inputs of at least one sample");
  std::vector<std::vector<Tensor>> outputs;
  outputs.reserve(inputs.size());
  for (const SampleInputs& sample : inputs) outputs.push_back(run(sample));
  return outputs;
}

std::vector<std::string> Executor::implementations() const {
  std::vector<std::string> result(graph_.node_capacity());
  for (std::size_t position = 0; position < order_.size(); ++position) {
    result[order_[position]] = runners_[position]->implementation();
  }
  return result;
}

void Executor::reset_stats() {
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
  stats_.runs = 0;
}

}  // namespace cleave
