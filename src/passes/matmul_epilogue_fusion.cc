// A MatMul's bias Add and Relu or GELU fused into the MatMul as attributes and an input.
#include "passes/matmul_epilogue_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace cleave {

namespace {

// When `id` is a float MatMul of a rank >= 2 A and a constant [K, N] B with K > 0 and no fused
// activation yet: N. A 1-D A drops the row dim, which a [1, N] bias would bring back.
std::optional<int64_t> fusable_matmul_columns(const Graph& graph, NodeId id) {
  if (!is_single_output_op(graph, id, "MatMul")) return std::nullopt;
  const Node& node = graph.node(id);
  if (node.inputs.size() < 2 || node.inputs.size() > 3 || node.attribute("activation")) {
    return std::nullopt;
  }
  const ValueId a = node.inputs[0], b = node.inputs[1];
  if (a == kNoValue || b == kNoValue || !(is_unread_weight(graph, b) || is_constant(graph, b)))
    return std::nullopt;
  const Value& left = graph.value(a);
  if (left.dtype != DataType::kFloat || !left.shape.rank_known || left.shape.rank() < 2) {
    return std::nullopt;
  }
  const TensorData& weights = *graph.value(b).initializer;
  if (weights.dtype != DataType::kFloat || weights.dims.size() != 2 || weights.dims[0] <= 0) {
    return std::nullopt;
  }
  return weights.dims[1];
}

// Whether `bias` is a float constant of `columns` values shaped [columns] or [1, ..., columns],
// of rank at most `output_rank` so that adding it widens nothing.
bool is_row_bias(const Graph& graph, ValueId bias, int64_t columns, std::size_t output_rank) {
  if (bias == kNoValue || !(is_unread_weight(graph, bias) || is_constant(graph, bias)))
    return false;
  const TensorData& data = *graph.value(bias).initializer;
  if (data.dtype != DataType::kFloat || data.dims.empty() || data.dims.size() > output_rank ||
      data.dims.back() != columns) {
    return false;
  }
  return std::all_of(data.dims.begin(), data.dims.end() - 1, [](int64_t d) { return d == 1; });
}

bool is_constant_near(const Graph& graph, ValueId value, float expected) {
  std::optional<float> actual = constant_float_scalar(graph, value);
  return actual && std::fabs(*actual - expected) <= 1e-5f * std::fabs(expected);
}

// Fuses `add` when it is Add(MatMul(...), bias) or Add(bias, MatMul(...)); true when it did.
bool fuse_bias(Graph& graph, NodeId add, const std::vector<bool>& read_by_bodies) {
  if (!is_single_output_op(graph, add, "Add") || graph.node(add).inputs.size() != 2) return false;
  for (int product_slot : {0, 1}) {
    const ValueId product = graph.node(add).inputs[product_slot];
    const ValueId bias = graph.node(add).inputs[1 - product_slot];
    if (product == kNoValue || product == bias) continue;
    const NodeId matmul = graph.value(product).producer;
    std::optional<int64_t> columns = fusable_matmul_columns(graph, matmul);
    if (!columns || graph.node(matmul).inputs.size() != 2 ||
        only_reader(graph, product, read_by_bodies) != add ||
        // With B a matrix, the product has A's rank.
        !is_row_bias(graph, bias, *columns,
                     graph.value(graph.node(matmul).inputs[0]).shape.rank())) {
      continue;
    }
    // merge_into_producer merges into the producer of input 0.
    if (product_slot == 1) {
      graph.set_node_input(add, 0, kNoValue);
      graph.set_node_input(add, 1, bias);
      graph.set_node_input(add, 0, product);
    }
    graph.node(matmul).inputs.push_back(kNoValue);
    graph.set_node_input(matmul, 2, bias);
    merge_into_producer(graph, add);
    return true;
  }
  return false;
}

// Fuses `relu` when it reads a fusable MatMul's output alone; true when it did.
bool fuse_relu(Graph& graph, NodeId relu, const std::vector<bool>& read_by_bodies) {
  if (!is_single_output_op(graph, relu, "Relu")) return false;
  const ValueId product = graph.node(relu).inputs[0];
  if (product == kNoValue) return false;
  const NodeId matmul = graph.value(product).producer;
  if (!fusable_matmul_columns(graph, matmul) ||
      only_reader(graph, product, read_by_bodies) != relu ||
      !can_merge_into_producer(graph, relu, read_by_bodies)) {
    return false;
  }
  graph.node(matmul).set_attribute("activation", Attribute::of_string("Relu"));
  merge_into_producer(graph, relu);
  return true;
}

// Fuses the GELU whose first node, `scale` = Div(y, √2) or Mul(y, 1/√2), reads a fusable
// MatMul's output y; true when it did.
bool fuse_gelu(Graph& graph, NodeId scale, const std::vector<bool>& read_by_bodies) {
  const bool is_div = is_single_output_op(graph, scale, "Div");
  if (!is_div && !is_single_output_op(graph, scale, "Mul")) return false;
  const Node& scale_node = graph.node(scale);
  if (scale_node.inputs.size() != 2) return false;
  ValueId y = kNoValue;
  for (int slot : {0, 1}) {
    if (is_div && slot == 1) break;  // Only the dividend may be y.
    ValueId candidate = scale_node.inputs[slot];
    ValueId factor = scale_node.inputs[1 - slot];
    float expected = is_div ? std::sqrt(2.0f) : 1.0f / std::sqrt(2.0f);
    if (candidate != kNoValue && is_constant_near(graph, factor, expected)) y = candidate;
  }
  if (y == kNoValue) return false;
  const NodeId matmul = graph.value(y).producer;
  if (!fusable_matmul_columns(graph, matmul) || !is_removable(graph, y, read_by_bodies)) {
    return false;
  }
  std::vector<NodeId> readers = graph.consumers(y);
  std::sort(readers.begin(), readers.end());
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  if (readers.size() != 2) return false;
  const NodeId other = readers[0] == scale ? readers[1] : readers[0];

  const NodeId erf = only_reader(graph, scale_node.outputs[0], read_by_bodies);
  if (!is_single_output_op(graph, erf, "Erf")) return false;
  const ValueId erf_value = graph.node(erf).outputs[0];
  const NodeId plus_one = only_reader(graph, erf_value, read_by_bodies);
  if (!is_single_output_op(graph, plus_one, "Add") ||
      !is_constant_near(graph, other_input(graph.node(plus_one), erf_value), 1.0f)) {
    return false;
  }
  const ValueId gate = graph.node(plus_one).outputs[0];
  const NodeId gate_reader = only_reader(graph, gate, read_by_bodies);
  if (!is_single_output_op(graph, gate_reader, "Mul")) return false;

  NodeId last = -1;
  std::vector<NodeId> chain = {scale, erf, plus_one, gate_reader};
  if (gate_reader == other && other_input(graph.node(other), gate) == y) {
    // y * gate, then halved.
    const ValueId product = graph.node(other).outputs[0];
    const NodeId half = only_reader(graph, product, read_by_bodies);
    if (!is_single_output_op(graph, half, "Mul") ||
        !is_constant_near(graph, other_input(graph.node(half), product), 0.5f)) {
      return false;
    }
    chain.push_back(half);
    last = half;
  } else {
    // y halved first, then times the gate.
    if (!is_single_output_op(graph, other, "Mul") ||
        !is_constant_near(graph, other_input(graph.node(other), y), 0.5f)) {
      return false;
    }
    const ValueId halved = graph.node(other).outputs[0];
    if (only_reader(graph, halved, read_by_bodies) != gate_reader ||
        other_input(graph.node(gate_reader), gate) != halved) {
      return false;
    }
    chain.push_back(other);
    last = gate_reader;
  }

  const ValueId output = graph.node(last).outputs[0];
  for (NodeId id : chain) graph.remove_node(id);
  // The MatMul now writes the GELU's output, which keeps its name; y is left without a writer.
  Node& product_node = graph.node(matmul);
  std::replace(product_node.outputs.begin(), product_node.outputs.end(), y, output);
  graph.value(output).producer = matmul;
  graph.value(y).producer = -1;
  product_node.set_attribute("activation", Attribute::of_string("Gelu"));
  return true;
}

}  // namespace

PassResult fuse_matmul_epilogues(Graph& graph) {
  PassResult result{"MatMul epilogue fusion", {}, {}};
  std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.topological_order()) {
    if (graph.node(id).removed) continue;
    if (fuse_bias(graph, id, read_by_bodies)) {
      result.add("bias Adds fused into MatMul");
    } else if (fuse_relu(graph, id, read_by_bodies)) {
      result.add("Relu nodes fused into MatMul");
    } else if (fuse_gelu(graph, id, read_by_bodies)) {
      result.add("GELUs fused into MatMul");
    }
  }
  return result;
}

}  // namespace cleave
