// Conv+Relu/Clip/SiLU and BatchNormalization+Relu fusion: the activation becomes an attribute.
#include "passes/conv_activation_fusion.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "runtime/executor.h"

namespace cleave {

namespace {

// A constant float scalar Clip bound; `fallback` when the input is omitted, nullopt when the
// bound is not a constant float scalar.
std::optional<float> clip_bound(const Graph& graph, const Node& clip, std::size_t slot,
                                float fallback) {
  if (clip.inputs.size() <= slot || clip.inputs[slot] == kNoValue) return fallback;
  return constant_float_scalar(graph, clip.inputs[slot]);
}

// The Conv producing `value` when it is a float Conv without a fused activation, else -1.
NodeId plain_conv_producing(const Graph& graph, ValueId value) {
  NodeId conv_id = graph.value(value).producer;
  if (conv_id < 0) return -1;
  const Node& conv = graph.node(conv_id);
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.attribute("activation")) return -1;
  DataType type = graph.value(value).dtype;
  return type == DataType::kFloat || type == DataType::kUndefined ? conv_id : -1;
}

// The activation a gate of Mul(c, gate(c)) makes: "Swish" for Sigmoid, "HardSwish" for
// HardSigmoid with alpha 1/6 and beta 1/2 (how PyTorch exports hardswish before opset 14);
// empty for anything else.
std::string gated_activation(const Node& gate) {
  if (!gate.domain.empty()) return "";
  if (gate.op_type == "Sigmoid") return "Swish";
  if (gate.op_type == "HardSigmoid" &&
      std::fabs(gate.float_attribute("alpha", 0.2f) - 1.0f / 6.0f) < 1e-6f &&
      gate.float_attribute("beta", 0.5f) == 0.5f) {
    return "HardSwish";
  }
  return "";
}

// Fuses `mul` when it is Mul(c, gate(c)) or Mul(gate(c), c) with c a plain Conv's output read by
// nothing else and gate a Sigmoid or hard sigmoid (gated_activation); returns the activation
// fused, empty when none was.
std::string fuse_swish(Graph& graph, NodeId mul, const std::vector<bool>& read_by_bodies) {
  const Node& node = graph.node(mul);
  if (node.op_type != "Mul" || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1) {
    return "";
  }
  for (int sigmoid_slot : {0, 1}) {
    ValueId gate = node.inputs[sigmoid_slot];
    ValueId conv_output = node.inputs[1 - sigmoid_slot];
    if (gate == kNoValue || conv_output == kNoValue || gate == conv_output) continue;
    NodeId sigmoid = graph.value(gate).producer;
    if (sigmoid < 0 || graph.node(sigmoid).inputs.at(0) != conv_output) continue;
    const std::string activation = gated_activation(graph.node(sigmoid));
    if (activation.empty()) continue;
    NodeId conv = plain_conv_producing(graph, conv_output);
    if (conv < 0 || graph.consumers(conv_output).size() != 2 || graph.consumers(gate).size() != 1 ||
        graph.value(gate).is_graph_output || read_by_bodies.at(gate) ||
        graph.value(conv_output).is_graph_output || read_by_bodies.at(conv_output)) {
      continue;
    }
    // Mul(c, c) with the Sigmoid gone reads only c, so the Mul can merge into the Conv.
    graph.set_node_input(mul, sigmoid_slot, conv_output);
    graph.remove_node(sigmoid);
    graph.node(conv).set_attribute("activation", Attribute::of_string(activation));
    merge_into_producer(graph, mul);
    return activation;
  }
  return "";
}

// Fuses `add` when it is Add(c, r) or Add(r, c) with c a plain Conv's output read by nothing
// else and r of c's shape: the Conv reads r as input 3 (`sum_input = 3`, oneDNN's sum post-op,
// applied before any activation fused later). ResNet's residual Add and the Relu after it
// cost 4 of its 87 ms as separate passes over the data.
bool fuse_residual_add(Graph& graph, NodeId add, const std::vector<bool>& read_by_bodies) {
  const Node& node = graph.node(add);
  if (node.op_type != "Add" || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1 || node.inputs[0] == node.inputs[1]) {
    return false;
  }
  for (int conv_slot : {0, 1}) {
    const ValueId conv_output = node.inputs[conv_slot];
    const ValueId residual = node.inputs[1 - conv_slot];
    if (conv_output == kNoValue || residual == kNoValue) continue;
    const NodeId conv = plain_conv_producing(graph, conv_output);
    if (conv < 0 || graph.node(conv).attribute("sum_input") || graph.node(conv).inputs.size() > 3 ||
        graph.consumers(conv_output).size() != 1 || graph.value(conv_output).is_graph_output ||
        read_by_bodies.at(conv_output)) {
      continue;
    }
    const Shape& shape = graph.value(conv_output).shape;
    if (!shape.is_static() || graph.value(residual).shape != shape ||
        graph.value(residual).dtype != DataType::kFloat) {
      continue;
    }
    // merge_into_producer merges into the producer of input 0.
    if (conv_slot == 1) {
      graph.set_node_input(add, 0, kNoValue);
      graph.set_node_input(add, 1, residual);
      graph.set_node_input(add, 0, conv_output);
    }
    std::vector<ValueId>& conv_inputs = graph.node(conv).inputs;
    conv_inputs.resize(4, kNoValue);  // An omitted bias stays omitted.
    graph.set_node_input(conv, 3, residual);
    graph.node(conv).set_attribute("sum_input", Attribute::of_int(3));
    merge_into_producer(graph, add);
    return true;
  }
  return false;
}

// Fuses `relu` into the BatchNormalization before it (oneDNN's fuse_norm_relu flag): DenseNet
// normalises and rectifies every Concat before its convolution, and the separate pass over
// the data cost 3.6 of its 62 ms.
bool fuse_batch_norm_relu(Graph& graph, NodeId relu, const std::vector<bool>& read_by_bodies) {
  ValueId normalized = graph.node(relu).inputs[0];
  NodeId norm = graph.value(normalized).producer;
  if (norm < 0) return false;
  const Node& node = graph.node(norm);
  if (node.op_type != "BatchNormalization" || !node.domain.empty() ||
      node.attribute("activation") || node.outputs.at(0) != normalized ||
      (graph.value(normalized).dtype != DataType::kFloat &&
       graph.value(normalized).dtype != DataType::kUndefined)) {
    return false;
  }
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {  // Training outputs must be unused.
    ValueId extra = node.outputs[i];
    if (extra != kNoValue &&
        (graph.value(extra).is_graph_output || !graph.consumers(extra).empty())) {
      return false;
    }
  }
  if (graph.consumers(normalized).size() != 1 ||
      !can_merge_into_producer(graph, relu, read_by_bodies)) {
    return false;
  }
  graph.node(norm).set_attribute("activation", Attribute::of_string("Relu"));
  merge_into_producer(graph, relu);
  return true;
}

}  // namespace

PassResult fuse_conv_activations(Graph& graph) {
  PassResult result{"Conv+activation fusion", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  constexpr float kLowest = std::numeric_limits<float>::lowest();
  constexpr float kHighest = std::numeric_limits<float>::max();
  for (NodeId id : graph.topological_order()) {
    if (graph.node(id).removed) continue;
    if (const std::string gated = fuse_swish(graph, id, read_by_bodies); !gated.empty()) {
      result.add(gated == "HardSwish" ? "HardSigmoid+Mul pairs fused into Conv"
                                      : "Sigmoid+Mul pairs fused into Conv");
      continue;
    }
    if (fuse_residual_add(graph, id, read_by_bodies)) {
      result.add("Add nodes fused into Conv as a sum");
      continue;
    }
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
    if (relu && fuse_batch_norm_relu(graph, id, read_by_bodies)) {
      result.add("Relu nodes fused into BatchNormalization");
      continue;
    }
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
