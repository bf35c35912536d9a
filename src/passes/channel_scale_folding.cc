// Channel-scale folding: Conv(x * s, W) becomes Conv(x, W * s) where that is less work.
#include "passes/channel_scale_folding.h"

#include <vector>

namespace cleave {

namespace {

// Whether `scale` broadcasts against `data` (a static [N, C, ...]) along the channel axis
// only: after left-padding with 1s to data's rank, it is [1, C, 1, ...].
bool is_channel_scale(const Shape& scale, const Shape& data) {
  if (!scale.is_static() || !data.is_static() || scale.dims.size() > data.dims.size()) {
    return false;
  }
  const std::vector<int64_t> data_dims = data.sizes();
  std::vector<int64_t> dims(data_dims.size() - scale.dims.size(), 1);
  for (int64_t size : scale.sizes()) dims.push_back(size);
  for (std::size_t axis = 0; axis < dims.size(); ++axis) {
    if (dims[axis] != (axis == 1 ? data_dims[1] : 1)) return false;
  }
  return true;
}

// Folds the Mul `mul_id` into the Conv reading it; false when a precondition fails.
bool try_fold(Graph& graph, NodeId mul_id, const std::vector<bool>& read_by_bodies) {
  if (!is_single_output_op(graph, mul_id, "Mul")) return false;
  const Node& mul = graph.node(mul_id);
  if (mul.inputs.size() != 2 || mul.attribute("broadcast")) return false;
  const ValueId product = mul.outputs[0];
  const NodeId conv_id = only_reader(graph, product, read_by_bodies);
  if (conv_id < 0) return false;
  const Node& conv = graph.node(conv_id);
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.int_attribute("group", 1) != 1 ||
      conv.inputs.size() < 2 || conv.inputs[0] != product || conv.inputs[1] == product) {
    return false;
  }
  const ValueId weights = conv.inputs[1];
  if (!is_unread_weight(graph, weights) && !is_constant(graph, weights)) return false;
  const Value& weights_value = graph.value(weights);
  const TensorData& weight_data = *weights_value.initializer;
  if (weight_data.dtype != DataType::kFloat || weight_data.dims.size() < 3) return false;

  for (std::size_t data_slot = 0; data_slot < 2; ++data_slot) {
    const ValueId data = mul.inputs[data_slot];
    const ValueId scale = mul.inputs[1 - data_slot];
    const Value& data_value = graph.value(data);
    const Value& scale_value = graph.value(scale);
    if (data_value.dtype != DataType::kFloat || scale_value.dtype != DataType::kFloat) continue;
    if (data_value.shape.dims.size() != weight_data.dims.size() ||
        !is_channel_scale(scale_value.shape, data_value.shape) ||
        data_value.shape.sizes()[1] != weight_data.dims[1]) {
      continue;
    }
    // Scaling and reordering the weights must touch fewer elements than scaling the data.
    if (2 * weight_data.element_count() >= data_value.shape.element_count()) return false;

    const std::string mul_name = mul.name;
    const ValueId scaled = graph.add_value(unique_value_name(graph, weights_value.name + "_scaled"),
                                           DataType::kFloat, Shape::of(weight_data.dims));
    graph.remove_node(mul_id);
    graph.add_node("Mul", {weights, scale}, {scaled}, {}, mul_name);
    graph.set_node_input(conv_id, 0, data);
    graph.set_node_input(conv_id, 1, scaled);
    return true;
  }
  return false;
}

}  // namespace

PassResult fold_channel_scales(Graph& graph) {
  PassResult result{"channel-scale folding", {}, {}};
  const std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.topological_order()) {
    if (try_fold(graph, id, read_by_bodies)) result.add("channel scales folded into Conv weights");
  }
  return result;
}

}  // namespace cleave
