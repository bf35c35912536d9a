// Kernel output specs by one preparing run, and graphs completed with the shapes found.
#include "codegen/kernel_specs.h"

#include <fmt/core.h>
#include <omp.h>

#include <algorithm>

#include "runtime/executor.h"
#include "runtime/random_inputs.h"

namespace cleave {

std::vector<std::vector<OutputSpec>> prepare_kernel_specs(const Graph& graph, int threads,
                                                          bool blocked_layouts,
                                                          ConvolutionFamily family) {
  std::vector<std::vector<OutputSpec>> specs(graph.node_capacity());
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  BufferPool pool;
  threads = std::max(1, threads);
  const int saved_threads = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::vector<Tensor> values(graph.value_capacity());
  std::vector<bool> is_constant(graph.value_capacity(), false);
  for (ValueId id : graph.initializers()) {
    const TensorData& data = *graph.value(id).initializer;
    if (!data.bytes) throw Error(fmt::format("initializer '{}' has no data", graph.value(id).name));
    values[id] = Tensor::borrow(data.dtype, data.dims, data.bytes->data());
    is_constant[id] = true;
  }
  // Integer inputs are zeros: a valid index, count or sequence length whatever the model (cleave
  // run's seeded 0 to 3 could exceed a sequence, as in LSTM's sequence_lens of one step). The
  // others are cleave run's seeded values.
  uint64_t index = 0;
  for (ValueId id : graph.inputs()) {
    const Value& value = graph.value(id);
    const uint64_t seed = index++;  // random_inputs(graph, 0)'s seed of this input
    const bool integer = value.dtype == DataType::kInt64 || value.dtype == DataType::kInt32 ||
                         value.dtype == DataType::kInt16;
    values[id] =
        integer ? Tensor::allocate(value.dtype, value.shape.sizes()) : random_tensor(value, seed);
  }
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    bool blocked = blocked_layouts;
    for (ValueId output : node.outputs) {
      blocked = blocked && output != kNoValue && blocked_layout_allowed(graph, output);
    }
    NodeRunner runner(graph, id, blocked, blocked_layouts ? family : ConvolutionFamily::kBlocked);
    std::vector<const Tensor*> inputs;
    std::vector<bool> constant;
    for (ValueId input : node.inputs) {
      inputs.push_back(input == kNoValue ? nullptr : &values[input]);
      constant.push_back(input != kNoValue && is_constant[input]);
    }
    std::vector<Tensor> outputs;
    runner.run(inputs, constant, outputs, pool, engine, stream, threads);
    stream.wait();
    specs[id] = runner.specs();
    for (std::size_t i = 0; i < node.outputs.size() && i < outputs.size(); ++i) {
      if (node.outputs[i] != kNoValue) values[node.outputs[i]] = std::move(outputs[i]);
    }
  }
  omp_set_num_threads(saved_threads);
  return specs;
}

Graph with_prepared_shapes(const Graph& graph) {
  Graph shaped = graph;
  const auto specs = prepare_kernel_specs(graph, 1, false, ConvolutionFamily::kBlocked);
  for (NodeId id : shaped.node_ids()) {
    const Node& node = shaped.node(id);
    for (std::size_t i = 0; i < node.outputs.size() && i < specs[id].size(); ++i) {
      if (node.outputs[i] == kNoValue) continue;
      Value& value = shaped.value(node.outputs[i]);
      value.dtype = specs[id][i].dtype;
      value.shape = Shape::of(specs[id][i].shape);
    }
  }
  return shaped;
}

}  // namespace cleave
