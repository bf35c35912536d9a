// Which loaded weights a kernel no longer needs, and freeing them: one rule for every executor.
#include "runtime/kernels/packed_constants.h"

#include "runtime/kernel.h"

namespace cleave {

std::vector<std::size_t> inputs_packed_for_good(const Graph& graph, const Node& node,
                                                const Kernel* kernel) {
  const auto* packed = dynamic_cast<const PackedConstants*>(kernel);
  if (packed == nullptr) return {};
  for (ValueId input : node.inputs) {
    if (input != kNoValue && !graph.value(input).shape.is_static()) return {};
  }
  std::vector<std::size_t> result;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId input = node.inputs[i];
    if (input == kNoValue || !graph.value(input).initializer) continue;
    if (graph.value(input).is_graph_output || packed->reads_at_run(i)) continue;
    result.push_back(i);
  }
  return result;
}

std::size_t free_loaded_weight(Graph& graph, ValueId value, Tensor& constant) {
  TensorData& data = *graph.value(value).initializer;
  if (!data.bytes) return 0;
  const std::size_t bytes = data.bytes->size();
  data.bytes.reset();
  constant = Tensor::borrow(data.dtype, data.dims, nullptr);
  return bytes;
}

}  // namespace cleave
