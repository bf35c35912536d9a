// Conv+Relu/Clip fusion: the activation becomes attributes of the Conv before it.
#include "passes/conv_activation_fusion.h"

#include <limits>
#include <optional>

#include "runtime/executor.h"

namespace cleave {

namespace {

// A constant float scalar Clip bound; `fallback` when the input is omitted, nullopt when the
// bound is not a constant float scalar.
std::optional<float> clip_bound(const Graph& graph, const Node& clip, std::size_t slot,
                                float fallback) {
  if (clip.inputs.size() <= slot || clip.inputs[slot] == kNoValue) return fallback;
  ValueId bound = clip.inputs[slot];
  if (!is_constant(graph, bound)) return std::nullopt;
  const TensorData& data = *graph.value(bound).initializer;
  if (data.dtype != DataType::kFloat || data.element_count() != 1 || data.as<float>().size() != 1) {
    return std::nullopt;
  }
  return data.as<float>()[0];
}

}  // namespace

PassResult fuse_conv_activations(Graph& graph) {
  PassResult result{"Conv+activation fusion", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  constexpr float kHighest = std::numeric_limits<float>::max();
  for (NodeId id : graph.topological_order()) {
    const Node& activation = graph.node(id);
    bool relu = activation.op_type == "Relu";
    if ((!relu && activation.op_type != "Clip") || !activation.domain.empty()) continue;
    if (activation.inputs.empty() || activation.inputs[0] == kNoValue ||
        activation.outputs.size() != 1) {
      continue;
    }
    ValueId conv_output = activation.inputs[0];
    NodeId conv_id = graph.value(conv_output).producer;
    if (conv_id < 0) continue;
    const Node& conv = graph.node(conv_id);
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.attribute("activation")) continue;
    if (graph.value(conv_output).dtype != DataType::kFloat &&
        graph.value(conv_output).dtype != DataType::kUndefined) {
      continue;
    }
    if (graph.consumers(conv_output).size() != 1 ||
        !can_merge_into_producer(graph, id, read_by_bodies)) {
      continue;
    }
    std::optional<float> low = kLowest;
    std::optional<float> high = kHighest;
    if (!relu) {
      if (opset_of(graph, activation) < 11) {
        low = activation.float_attribute("min", kLowest);
        high = activation.float_attribute("max", kHighest);
      } else {
        low = clip_bound(graph, activation, 1, kLowest);
        high = clip_bound(graph, activation, 2, kHighest);
      }
      if (!low || !high) continue;
    }
    Node& fused = graph.node(conv_id);
    fused.set_attribute("activation", Attribute::of_string(relu ? "Relu" : "Clip"));
    if (!relu) {
      fused.set_attribute("activation_min", Attribute::of_float(*low));
      fused.set_attribute("activation_max", Attribute::of_float(*high));
    }
    merge_into_producer(graph, id);
    result.add(relu ? "Relu nodes fused into Conv" : "Clip nodes fused into Conv");
  }
  return result;
}

}  // namespace cleave
