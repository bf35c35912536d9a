// QDQ table fusion: DequantizeLinear → elementwise float chain → QuantizeLinear as a 256-entry
// lookup of the 8-bit values.
#include "passes/qdq_table_fusion.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cleave {

namespace {

constexpr int64_t kTableSize = 256;

bool is_8_bit(DataType type) {
  return type == DataType::kUInt8 || type == DataType::kInt8;
}

// Ops whose output element depends only on the same element of their inputs, and whose kernel
// at 256 elements or more computes each one as at any larger size (exact IEEE arithmetic, or
// one implementation from 64 elements on). HardSwish is not one: its oneDNN kernel starts at
// 16384 elements and rounds unlike the loop.
bool is_table_op(const Node& node) {
  static const std::set<std::string, std::less<>> ops = {
      "Sigmoid", "Tanh", "HardSigmoid", "Mul", "Add", "Sub", "Relu", "Neg", "Clip"};
  return node.domain.empty() && node.outputs.size() == 1 && ops.contains(node.op_type);
}

// A constant of one element (a per-tensor scale or zero point, a chain's scalar operand).
bool is_scalar_constant(const Graph& graph, ValueId value) {
  return value != kNoValue && is_constant(graph, value) &&
         graph.value(value).initializer->element_count() == 1;
}

// A per-tensor DequantizeLinear or QuantizeLinear of constant scale (f32) and zero point.
bool per_tensor_quantization(const Graph& graph, NodeId node, std::string_view op) {
  if (!is_single_output_op(graph, node, op)) return false;
  const Node& n = graph.node(node);
  if (n.inputs.size() < 2 || !is_scalar_constant(graph, n.inputs[1]) ||
      graph.value(n.inputs[1]).initializer->dtype != DataType::kFloat) {
    return false;
  }
  return n.inputs.size() < 3 || n.inputs[2] == kNoValue || is_scalar_constant(graph, n.inputs[2]);
}

struct Chain {
  NodeId dequantize = -1;
  std::vector<NodeId> nodes;  // In id order: the model's, a topological one.
};

// The chain computing QuantizeLinear `quantize`'s input, when it is one (see the header).
std::optional<Chain> chain_of(const Graph& graph, NodeId quantize,
                              const std::vector<bool>& read_by_bodies) {
  Chain chain;
  std::vector<ValueId> pending = {graph.node(quantize).inputs[0]};
  std::set<NodeId> seen;
  while (!pending.empty()) {
    const ValueId value = pending.back();
    pending.pop_back();
    const NodeId producer = graph.value(value).producer;
    if (producer >= 0 && graph.node(producer).op_type == "DequantizeLinear" &&
        graph.node(producer).domain.empty()) {
      if (chain.dequantize >= 0 && chain.dequantize != producer) return std::nullopt;
      chain.dequantize = producer;
      continue;
    }
    if (producer < 0 || !is_table_op(graph.node(producer))) return std::nullopt;
    if (!seen.insert(producer).second) continue;
    for (ValueId input : graph.node(producer).inputs) {
      if (input == kNoValue || is_scalar_constant(graph, input)) continue;
      pending.push_back(input);
    }
  }
  if (chain.dequantize < 0 || seen.empty() ||
      !per_tensor_quantization(graph, chain.dequantize, "DequantizeLinear")) {
    return std::nullopt;
  }
  const Node& dequantize = graph.node(chain.dequantize);
  // The 8-bit values' shape, the DequantizeLinear's where they have none recorded.
  const Value& source = graph.value(dequantize.inputs[0]).shape.is_static()
                            ? graph.value(dequantize.inputs[0])
                            : graph.value(dequantize.outputs[0]);
  if (!is_8_bit(graph.value(dequantize.inputs[0]).dtype) || !source.shape.is_static() ||
      source.shape.element_count() < kTableSize) {
    return std::nullopt;
  }
  chain.nodes.assign(seen.begin(), seen.end());
  for (NodeId id : chain.nodes) {
    const Node& node = graph.node(id);
    // Elementwise on the source's shape: a constant of higher rank would broadcast it up.
    for (ValueId input : node.inputs) {
      if (input != kNoValue && is_scalar_constant(graph, input) &&
          graph.value(input).initializer->dims.size() > source.shape.rank()) {
        return std::nullopt;
      }
    }
    const ValueId output = node.outputs[0];
    if (!is_removable(graph, output, read_by_bodies)) return std::nullopt;
    for (NodeId reader : graph.consumers(output)) {
      if (reader != quantize && !seen.contains(reader)) return std::nullopt;
    }
  }
  return chain;
}

// The 256 values of `type` in the order of their bytes (i8: 0..127, then -128..-1).
TensorData byte_values(DataType type) {
  std::vector<uint8_t> bytes(kTableSize);
  for (int64_t i = 0; i < kTableSize; ++i) bytes[i] = static_cast<uint8_t>(i);
  return TensorData::from<uint8_t>(type, {kTableSize}, bytes);
}

bool try_fuse_table(Graph& graph, NodeId quantize, const std::vector<bool>& read_by_bodies,
                    PassResult& result) {
  if (!per_tensor_quantization(graph, quantize, "QuantizeLinear")) return false;
  const Node q = graph.node(quantize);
  const ValueId output = q.outputs[0];
  // QuantizeLinear's type is its zero point's (u8 without one).
  const DataType type = q.inputs.size() > 2 && q.inputs[2] != kNoValue
                            ? graph.value(q.inputs[2]).initializer->dtype
                            : DataType::kUInt8;
  if (!is_8_bit(type) || q.attribute("output_dtype")) return false;
  std::optional<Chain> chain = chain_of(graph, quantize, read_by_bodies);
  if (!chain) return false;
  const Node dequantize = graph.node(chain->dequantize);
  const DataType source_type = graph.value(dequantize.inputs[0]).dtype;
  const std::string base = graph.value(output).name + "_table";
  // The chain again, on the 256 byte values: constant, so folding computes it.
  std::vector<ValueId> dequantize_inputs = dequantize.inputs;
  dequantize_inputs[0] =
      graph.add_initializer(unique_value_name(graph, base + "_bytes"), byte_values(source_type));
  const Shape table_shape = Shape::of({kTableSize});
  auto add_clone = [&](const Node& node, std::vector<ValueId> inputs, DataType dtype) {
    const ValueId out = graph.add_value(
        unique_value_name(graph, graph.value(node.outputs[0]).name + "_table"), dtype, table_shape);
    graph.add_node(node.op_type, std::move(inputs), {out}, node.attributes,
                   node.name.empty() ? std::string() : node.name + "_table", node.domain);
    return out;
  };
  std::vector<std::pair<ValueId, ValueId>> cloned = {
      {dequantize.outputs[0], add_clone(dequantize, dequantize_inputs, DataType::kFloat)}};
  auto clone_of = [&](ValueId value) {
    for (const auto& [from, to] : cloned) {
      if (from == value) return to;
    }
    return value;  // A constant.
  };
  for (NodeId id : chain->nodes) {
    const Node node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(clone_of(input));
    cloned.emplace_back(node.outputs[0], add_clone(node, inputs, DataType::kFloat));
  }
  std::vector<ValueId> quantize_inputs = q.inputs;
  quantize_inputs[0] = clone_of(q.inputs[0]);
  const ValueId table = add_clone(q, quantize_inputs, type);
  graph.remove_node(quantize);
  for (auto it = chain->nodes.rbegin(); it != chain->nodes.rend(); ++it) graph.remove_node(*it);
  graph.opset_imports.emplace("com.cleave", 1);
  graph.add_node("ByteTable", {dequantize.inputs[0], table}, {output}, {},
                 q.name.empty() ? std::string() : q.name + "_byte_table", "com.cleave");
  result.add("elementwise chains fused into com.cleave.ByteTable");
  return true;
}

}  // namespace

PassResult fuse_qdq_tables(Graph& graph) {
  PassResult result{"QDQ table fusion", {}, {}};
  const std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.node_ids()) {
    if (graph.node(id).removed || graph.node(id).op_type != "QuantizeLinear") continue;
    try_fuse_table(graph, id, read_by_bodies, result);
  }
  return result;
}

}  // namespace cleave
