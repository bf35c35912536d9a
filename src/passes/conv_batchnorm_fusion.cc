// Conv+BatchNormalization fusion: batch-norm scale and shift become conv weights and bias.
#include "passes/conv_batchnorm_fusion.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "passes/deferred_weights.h"

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

// The Conv's weights (`weights_wanted`) or bias folded with the BatchNormalization, from
// {weights, bias (empty: none), scale, shift, mean, variance}, each with its bytes.
TensorData folded(const std::vector<TensorData>& in, int64_t channels, double epsilon,
                  bool weights_wanted) {
  const auto floats = [](const TensorData& data) {
    auto span = data.as<float>();
    return std::vector<float>(span.begin(), span.end());
  };
  std::vector<float> bias(static_cast<std::size_t>(channels), 0.0f);
  if (in[1].has_data()) bias = floats(in[1]);
  const std::vector<float> scale = floats(in[2]), shift = floats(in[3]), mean = floats(in[4]),
                           variance = floats(in[5]);
  const int64_t per_channel = in[0].element_count() / channels;
  std::vector<float> fused_weights;
  if (weights_wanted) fused_weights = floats(in[0]);
  std::vector<float> fused_bias(static_cast<std::size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    // Double precision: the factor multiplies every weight of the channel.
    double factor = scale[c] / std::sqrt(static_cast<double>(variance[c]) + epsilon);
    for (int64_t k = 0; weights_wanted && k < per_channel; ++k) {
      float& w = fused_weights[static_cast<std::size_t>(c * per_channel + k)];
      w = static_cast<float>(w * factor);
    }
    fused_bias[c] =
        static_cast<float>((static_cast<double>(bias[c]) - mean[c]) * factor + shift[c]);
  }
  if (weights_wanted) return TensorData::from(DataType::kFloat, in[0].dims, fused_weights);
  return TensorData::from(DataType::kFloat, {channels}, fused_bias);
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
  // One weight left unread (planning from sizes): the fused ones are sizes only as well.
  bool sizes_only = is_unread_weight(graph, conv.inputs[1]);
  for (int i = 1; i <= 4; ++i) sizes_only = sizes_only || is_unread_weight(graph, bn.inputs[i]);
  sizes_only = sizes_only || (has_bias && is_unread_weight(graph, conv.inputs[2]));
  const std::string weight_name = graph.value(conv.inputs[1]).name;
  const std::vector<ValueId> inputs = {conv.inputs[1], has_bias ? conv.inputs[2] : kNoValue,
                                       bn.inputs[1],   bn.inputs[2],
                                       bn.inputs[3],   bn.inputs[4]};
  const double epsilon = bn.float_attribute("epsilon", 1e-5f);
  // The same fold, made now or, planning, when the fingerprint hashes each of its two.
  const auto fold = [channels, epsilon](bool weights_wanted) -> WeightRewrite {
    return [channels, epsilon, weights_wanted](const std::vector<TensorData>& in) {
      return folded(in, channels, epsilon, weights_wanted);
    };
  };
  std::vector<std::shared_ptr<const DeferredRewrite>> deferred;
  std::vector<TensorData> made;
  if (sizes_only) {
    for (bool weights_wanted : {true, false})
      deferred.push_back(defer_rewrite(graph, inputs, fold(weights_wanted)));
    made = {TensorData{DataType::kFloat, weights.dims, {}, {}},
            TensorData{DataType::kFloat, {channels}, {}, {}}};
  } else {
    std::vector<TensorData> in;
    for (ValueId value : inputs)
      in.push_back(value == kNoValue ? TensorData{} : *graph.value(value).initializer);
    made = {fold(true)(in), fold(false)(in)};
  }
  set_constant_input(graph, conv_id, 1, std::move(made[0]), weight_name + "_fused");
  set_constant_input(graph, conv_id, 2, std::move(made[1]), weight_name + "_fused_bias");
  for (std::size_t slot = 1; slot <= 2 && !deferred.empty() && deferred[0]; ++slot) {
    record_deferred_weight(graph, graph.node(conv_id).inputs[slot], deferred[slot - 1]);
  }
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
