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

// A constant of one element (a per-tensor scale or zero point, a chain's scalar operand). The
// size is asked first: is_constant reads a weight left in its file (planning from sizes), and
// every Add's bias would be read for nothing.
bool is_scalar_constant(const Graph& graph, ValueId value) {
  if (value == kNoValue) return false;
  const auto& initializer = graph.value(value).initializer;
  return initializer && initializer->element_count() == 1 && is_constant(graph, value);
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

// The chain computing QuantizeLinear `end`'s input (`end_in_chain` false), or ending with the
// elementwise node `end` (true: its output may have any readers), when it is one (see the
// header).
std::optional<Chain> chain_of(const Graph& graph, NodeId end, bool end_in_chain,
                              const std::vector<bool>& read_by_bodies) {
  Chain chain;
  std::vector<ValueId> pending = {end_in_chain ? graph.node(end).outputs[0]
                                               : graph.node(end).inputs[0]};
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
  // A constant source is constant folding's (and the tables' own chains are such).
  if (is_constant(graph, dequantize.inputs[0]) ||
      !is_8_bit(graph.value(dequantize.inputs[0]).dtype) || !source.shape.is_static() ||
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
    if (end_in_chain && id == end) continue;  // The chain's result, read by anything.
    if (!is_removable(graph, output, read_by_bodies)) return std::nullopt;
    for (NodeId reader : graph.consumers(output)) {
      if (reader != end && !seen.contains(reader)) return std::nullopt;
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

// The clone of `value`, or `value` itself (a constant).
ValueId clone_in(const std::vector<std::pair<ValueId, ValueId>>& cloned, ValueId value) {
  for (const auto& [from, to] : cloned) {
    if (from == value) return to;
  }
  return value;
}

ValueId add_clone(Graph& graph, const Node& node, std::vector<ValueId> inputs, DataType dtype) {
  const ValueId out =
      graph.add_value(unique_value_name(graph, graph.value(node.outputs[0]).name + "_table"), dtype,
                      Shape::of({kTableSize}));
  graph.add_node(node.op_type, std::move(inputs), {out}, node.attributes,
                 node.name.empty() ? std::string() : node.name + "_table", node.domain);
  return out;
}

// The chain's nodes again, its DequantizeLinear's too, on a constant of the 256 byte values of
// its source (so constant folding computes them): each chain value and its clone.
std::vector<std::pair<ValueId, ValueId>> clone_on_bytes(Graph& graph, const Chain& chain,
                                                        const std::string& base) {
  const Node dequantize = graph.node(chain.dequantize);
  std::vector<ValueId> inputs = dequantize.inputs;
  inputs[0] = graph.add_initializer(unique_value_name(graph, base + "_bytes"),
                                    byte_values(graph.value(dequantize.inputs[0]).dtype));
  std::vector<std::pair<ValueId, ValueId>> cloned = {
      {dequantize.outputs[0], add_clone(graph, dequantize, inputs, DataType::kFloat)}};
  for (NodeId id : chain.nodes) {
    const Node node = graph.node(id);
    inputs.clear();
    for (ValueId input : node.inputs) inputs.push_back(clone_in(cloned, input));
    cloned.emplace_back(node.outputs[0], add_clone(graph, node, inputs, DataType::kFloat));
  }
  return cloned;
}

// Replaces the chain (and `quantize`, when one) by ByteTable(source, table) writing `output`.
void replace_by_lookup(Graph& graph, const Chain& chain, NodeId quantize, ValueId table,
                       ValueId output, const std::string& name) {
  const ValueId source = graph.node(chain.dequantize).inputs[0];
  if (quantize >= 0) graph.remove_node(quantize);
  for (auto it = chain.nodes.rbegin(); it != chain.nodes.rend(); ++it) graph.remove_node(*it);
  graph.opset_imports.emplace("com.cleave", 1);
  graph.add_node("ByteTable", {source, table}, {output}, {},
                 name.empty() ? std::string() : name + "_byte_table", "com.cleave");
}

// DequantizeLinear → chain → QuantizeLinear `quantize`: a table of the 8-bit outputs.
bool try_fuse_quantized(Graph& graph, NodeId quantize, const std::vector<bool>& read_by_bodies,
                        PassResult& result) {
  if (!per_tensor_quantization(graph, quantize, "QuantizeLinear")) return false;
  const Node q = graph.node(quantize);
  const ValueId output = q.outputs[0];
  // QuantizeLinear's type is its zero point's (u8 without one).
  const DataType type = q.inputs.size() > 2 && q.inputs[2] != kNoValue
                            ? graph.value(q.inputs[2]).initializer->dtype
                            : DataType::kUInt8;
  if (!is_8_bit(type) || q.attribute("output_dtype")) return false;
  std::optional<Chain> chain = chain_of(graph, quantize, false, read_by_bodies);
  if (!chain) return false;
  const auto cloned = clone_on_bytes(graph, *chain, graph.value(output).name + "_table");
  std::vector<ValueId> inputs = q.inputs;
  inputs[0] = clone_in(cloned, q.inputs[0]);
  const ValueId table = add_clone(graph, q, inputs, type);
  replace_by_lookup(graph, *chain, quantize, table, output, q.name);
  result.add("elementwise chains fused into com.cleave.ByteTable");
  return true;
}

// DequantizeLinear → chain ending at `end`, whose float output other ops read (SiLU read by a
// squeeze-and-excitation's pool and product): a table of the float outputs, where the
// DequantizeLinear then goes too (else a lookup would replace as many passes as it adds).
bool try_fuse_float(Graph& graph, NodeId end, const std::vector<bool>& read_by_bodies,
                    PassResult& result) {
  if (!is_table_op(graph.node(end))) return false;
  std::optional<Chain> chain = chain_of(graph, end, true, read_by_bodies);
  if (!chain) return false;
  const ValueId dequantized = graph.node(chain->dequantize).outputs[0];
  for (NodeId reader : graph.consumers(dequantized)) {
    if (!std::binary_search(chain->nodes.begin(), chain->nodes.end(), reader)) return false;
  }
  if (!is_removable(graph, dequantized, read_by_bodies)) return false;
  const Node last = graph.node(end);
  const ValueId output = last.outputs[0];
  const auto cloned = clone_on_bytes(graph, *chain, graph.value(output).name + "_table");
  replace_by_lookup(graph, *chain, -1, clone_in(cloned, output), output, last.name);
  result.add("elementwise chains of float outputs fused into com.cleave.ByteTable");
  return true;
}

}  // namespace

PassResult fuse_qdq_tables(Graph& graph) {
  PassResult result{"QDQ table fusion", {}, {}};
  const std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.node_ids()) {
    if (graph.node(id).removed || graph.node(id).op_type != "QuantizeLinear") continue;
    try_fuse_quantized(graph, id, read_by_bodies, result);
  }
  // Last node first: a chain's whole length before its inner nodes.
  const std::vector<NodeId> ids = graph.node_ids();
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    if (!graph.node(*it).removed) try_fuse_float(graph, *it, read_by_bodies, result);
  }
  return result;
}

}  // namespace cleave
