// Identity/Dropout removal by rewiring readers, keeping graph output names.
#include "passes/identity_removal.h"

#include <optional>

namespace cleave {

namespace {

bool is_inference_dropout(const Graph& graph, const Node& node) {
  // Outputs past the first (the mask) must be unused: a removed node cannot provide them.
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    const Value& mask = graph.value(node.outputs[i]);
    if (mask.is_graph_output || !graph.consumers(node.outputs[i]).empty()) return false;
  }
  if (node.inputs.size() < 3 || node.inputs[2] == kNoValue) return true;
  // A constant ratio of 0 keeps every element even in training mode (torchvision's Swin
  // exports its attention dropouts so, with training_mode true).
  if (std::optional<float> ratio = constant_float_scalar(graph, node.inputs[1]); ratio == 0.0f)
    return true;
  // Opset 12+: training_mode must be a constant false.
  ValueId training = node.inputs[2];
  if (!is_constant(graph, training)) return false;
  const TensorData& data = *graph.value(training).initializer;
  return data.dtype == DataType::kBool && data.element_count() == 1 && data.bytes &&
         !data.bytes->empty() && (*data.bytes)[0] == std::byte{0};
}

// A Pad that adds nothing (every pad 0, from the opset-11 input or the older attribute):
// PyTorch exports DenseNet's average pools behind one, and as a plain-layout op it kept the
// convolutions around it from passing oneDNN's blocked layouts on.
bool is_zero_pad(const Graph& graph, const Node& node) {
  if (node.op_type != "Pad" || node.outputs.size() != 1) return false;
  if (const Attribute* pads = node.attribute("pads")) {
    for (int64_t pad : pads->ints) {
      if (pad != 0) return false;
    }
    return true;
  }
  if (node.inputs.size() < 2 || node.inputs[1] == kNoValue || !is_constant(graph, node.inputs[1]))
    return false;
  const TensorData& pads = *graph.value(node.inputs[1]).initializer;
  if (pads.dtype != DataType::kInt64 || !pads.bytes) return false;
  for (int64_t pad : pads.as<int64_t>()) {
    if (pad != 0) return false;
  }
  return true;
}

}  // namespace

PassResult remove_identities(Graph& graph) {
  PassResult result{"Identity/Dropout removal", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (!node.domain.empty() && node.domain != "ai.onnx") continue;
    bool identity = node.op_type == "Identity";
    bool zero_pad = is_zero_pad(graph, node);
    if (!identity && !zero_pad && !(node.op_type == "Dropout" && is_inference_dropout(graph, node)))
      continue;
    if (node.inputs.empty() || node.inputs[0] == kNoValue || node.outputs.empty()) continue;
    ValueId input = node.inputs[0];
    ValueId output = node.outputs[0];
    if (read_by_bodies[output]) continue;  // A body reads it by name; renaming would break it.
    const char* counter = identity   ? "Identity nodes removed"
                          : zero_pad ? "zero Pad nodes removed"
                                     : "Dropout nodes removed";
    if (!graph.value(output).is_graph_output) {
      graph.remove_node(id);
      graph.replace_all_uses(output, input);
      result.add(counter);
    } else if (can_merge_into_producer(graph, id, read_by_bodies)) {
      merge_into_producer(graph, id);
      result.add(counter);
    } else {
      result.add("kept for graph output names");
    }
  }
  return result;
}

}  // namespace cleave
