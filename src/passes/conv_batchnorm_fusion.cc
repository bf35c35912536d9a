// Conv+BatchNormalization fusion: batch-norm scale and shift become conv weights and bias.
#include "passes/conv_batchnorm_fusion.h"

#include <cmath>
#include <vector>

namespace cleave {

namespace {

// A float weight: read, or left unread (sizes only).
bool is_float_constant(const Graph& graph, ValueId value) {
  return (is_unread_weight(graph, value) || is_constant(graph, value)) &&
         graph.value(value).initializer->dtype == DataType::kFloat;
}

// Whether `value` is a float weight of `count` elements shaped [count].
bool is_channel_vector(const Graph& graph, ValueId value, int64_t count) {
  if (!is_float_constant(graph, value)) return false;
  const TensorData& data = *graph.value(value).initializer;
  return data.dims.size() == 1 && data.dims[0] == count &&
         (!data.has_data() || static_cast<int64_t>(data.as<float>().size()) == count);
}

// Float contents of a 1-D constant with `count` elements (is_channel_vector, read).
std::vector<float> channel_vector(const Graph& graph, ValueId value) {
  auto span = graph.value(value).initializer->as<float>();
  return {span.begin(), span.end()};
}

bool is_inference_batchnorm(const Graph& graph, const Node& bn) {
  if (bn.inputs.size() != 5 || bn.outputs.empty()) return false;
  for (std::size_t i = 1; i < bn.outputs.size(); ++i) {
    ValueId extra = bn.outputs[i];
    if (graph.value(extra).is_graph_output || !graph.consumers(extra).empty()) return false;
  }
  return bn.int_attribute("training_mode", 0) == 0 && bn.int_attribute("spatial", 1) == 1;
}

// Fuses `bn_id` into the Conv before it; false when a precondition fails.
bool try_fuse(Graph& graph, NodeId bn_id, const std::vector<bool>& read_by_bodies) {
  const Node& bn = graph.node(bn_id);
  if (!is_inference_batchnorm(graph, bn) || bn.inputs[0] == kNoValue) return false;
  ValueId conv_output = bn.inputs[0];
  NodeId conv_id = graph.value(conv_output).producer;
  if (conv_id < 0) return false;
  const Node& conv = graph.node(conv_id);
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) return false;
  if (conv.attribute("activation")) return false;  // Already fused: BN would follow the activation.
  if (graph.consumers(conv_output).size() != 1 ||
      !can_merge_into_producer(graph, bn_id, read_by_bodies)) {
    return false;
  }
  if (conv.inputs.size() < 2 || !is_float_constant(graph, conv.inputs[1])) return false;
  const TensorData& weights = *graph.value(conv.inputs[1]).initializer;
  if (weights.dims.size() < 3) return false;
  int64_t channels = weights.dims[0];
  if (channels <= 0 ||
      (weights.has_data() &&
       weights.as<float>().size() != static_cast<std::size_t>(weights.element_count())))
    return false;
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  if (has_bias && !is_channel_vector(graph, conv.inputs[2], channels)) return false;
  for (int i = 1; i <= 4; ++i)
    if (!is_channel_vector(graph, bn.inputs[i], channels)) return false;
  // One weight left unread (a plan on paper): the fused ones are sizes only as well.
  bool sizes_only = is_unread_weight(graph, conv.inputs[1]);
  for (int i = 1; i <= 4; ++i) sizes_only = sizes_only || is_unread_weight(graph, bn.inputs[i]);
  sizes_only = sizes_only || (has_bias && is_unread_weight(graph, conv.inputs[2]));
  std::string weight_name = graph.value(conv.inputs[1]).name;
  std::vector<int64_t> weight_dims = weights.dims;
  if (sizes_only) {
    for (ValueId value : conv.inputs) note_unread_weight_need(graph, value);
    for (ValueId value : bn.inputs) note_unread_weight_need(graph, value);
    set_constant_input(graph, conv_id, 1, TensorData{DataType::kFloat, weight_dims, {}, {}},
                       weight_name + "_fused");
    set_constant_input(graph, conv_id, 2, TensorData{DataType::kFloat, {channels}, {}, {}},
                       weight_name + "_fused_bias");
    merge_into_producer(graph, bn_id);
    return true;
  }
  std::vector<float> bias(static_cast<std::size_t>(channels), 0.0f);
  if (has_bias) bias = channel_vector(graph, conv.inputs[2]);
  const std::vector<float> scale = channel_vector(graph, bn.inputs[1]);
  const std::vector<float> shift = channel_vector(graph, bn.inputs[2]);
  const std::vector<float> mean = channel_vector(graph, bn.inputs[3]);
  const std::vector<float> variance = channel_vector(graph, bn.inputs[4]);
  double epsilon = bn.float_attribute("epsilon", 1e-5f);

  int64_t per_channel = weights.element_count() / channels;
  std::vector<float> fused_weights(weights.as<float>().begin(), weights.as<float>().end());
  std::vector<float> fused_bias(static_cast<std::size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    // Double precision: the factor multiplies every weight of the channel.
    double factor = scale[c] / std::sqrt(static_cast<double>(variance[c]) + epsilon);
    for (int64_t k = 0; k < per_channel; ++k) {
      float& w = fused_weights[static_cast<std::size_t>(c * per_channel + k)];
      w = static_cast<float>(w * factor);
    }
    fused_bias[c] =
        static_cast<float>((static_cast<double>(bias[c]) - mean[c]) * factor + shift[c]);
  }
  set_constant_input(graph, conv_id, 1,
                     TensorData::from(DataType::kFloat, weight_dims, fused_weights),
                     weight_name + "_fused");
  set_constant_input(graph, conv_id, 2, TensorData::from(DataType::kFloat, {channels}, fused_bias),
                     weight_name + "_fused_bias");
  merge_into_producer(graph, bn_id);
  return true;
}

}  // namespace

PassResult fuse_conv_batchnorm(Graph& graph) {
  PassResult result{"Conv+BatchNormalization fusion", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (node.op_type != "BatchNormalization" || !node.domain.empty()) continue;
    if (try_fuse(graph, id, read_by_bodies)) result.add("BatchNormalization nodes fused into Conv");
  }
  return result;
}

}  // namespace cleave
