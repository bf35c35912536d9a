// QDQ fusion: a Conv, MatMul, Add, MaxPool or Concat between DequantizeLinear inputs and a
// QuantizeLinear output becomes the op that computes it in integers.
#include "passes/qdq_fusion.h"

#include <fmt/core.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "passes/qdq_table_fusion.h"

namespace cleave {

namespace {

// The operands of a DequantizeLinear (or QuantizeLinear) with constant scale and zero point.
struct Quantization {
  ValueId data = kNoValue, scale = kNoValue, zero = kNoValue;
  int64_t axis = 1;
};

std::optional<Quantization> quantization_of(const Graph& graph, NodeId node, std::string_view op) {
  if (!is_single_output_op(graph, node, op)) return std::nullopt;
  const Node& n = graph.node(node);
  Quantization q;
  q.data = n.inputs[0];
  q.scale = n.inputs.size() > 1 ? n.inputs[1] : kNoValue;
  q.zero = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  q.axis = n.int_attribute("axis", 1);
  if (q.data == kNoValue || q.scale == kNoValue || !is_constant(graph, q.scale)) {
    return std::nullopt;
  }
  if (graph.value(q.scale).initializer->dtype != DataType::kFloat) return std::nullopt;
  if (q.zero != kNoValue && !is_constant(graph, q.zero)) return std::nullopt;
  return q;
}

// The DequantizeLinear computing `value`, when there is one.
std::optional<Quantization> dequantized(const Graph& graph, ValueId value) {
  if (value == kNoValue) return std::nullopt;
  return quantization_of(graph, graph.value(value).producer, "DequantizeLinear");
}

int64_t count_of(const Graph& graph, ValueId value) {
  return graph.value(value).initializer->element_count();
}

bool is_8_bit(DataType type) {
  return type == DataType::kUInt8 || type == DataType::kInt8;
}

std::vector<float> floats_of(const Graph& graph, ValueId value) {
  const auto span = graph.value(value).initializer->as<float>();
  return {span.begin(), span.end()};
}

// Zero points as int64 (absent: 0).
std::vector<int64_t> zeros_of(const Graph& graph, ValueId value) {
  if (value == kNoValue) return {0};
  const TensorData& data = *graph.value(value).initializer;
  std::vector<int64_t> out;
  if (data.dtype == DataType::kUInt8) {
    for (uint8_t v : data.as<uint8_t>()) out.push_back(v);
  } else if (data.dtype == DataType::kInt8) {
    for (int8_t v : data.as<int8_t>()) out.push_back(v);
  } else if (data.dtype == DataType::kInt32) {
    for (int32_t v : data.as<int32_t>()) out.push_back(v);
  }
  return out;
}

// The zero point of `q` as a value: its own, or a new zero constant of the data's type (the
// QLinear ops require one where DequantizeLinear may omit it).
ValueId zero_value(Graph& graph, const Quantization& q, DataType type, const std::string& base) {
  if (q.zero != kNoValue) return q.zero;
  const std::string name = unique_value_name(graph, base + "_zero_point");
  if (type == DataType::kInt8) {
    return graph.add_initializer(name, TensorData::from<int8_t>(type, {}, {0}));
  }
  return graph.add_initializer(name, TensorData::from<uint8_t>(type, {}, {0}));
}

// The element type of quantized `value`: as recorded, or as its QuantizeLinear makes it.
DataType quantized_type(const Graph& graph, ValueId value) {
  const Value& v = graph.value(value);
  if (v.dtype != DataType::kUndefined) return v.dtype;
  auto q = quantization_of(graph, v.producer, "QuantizeLinear");
  if (!q) return DataType::kUndefined;
  return q->zero == kNoValue ? DataType::kUInt8 : graph.value(q->zero).initializer->dtype;
}

// What the fusion reads: the operands, and the nodes it replaces.
struct Match {
  NodeId product = -1, relu = -1, quantize = -1;
  Quantization x, w, y;
  ValueId bias = kNoValue;  // Int32, after bias_of.
  int64_t channels = 0;
};

// Whether `w` is constant 8-bit weights of `rank` whose scale and zero point are per tensor or
// per `channels` along `axis`.
bool fits_weights(const Graph& graph, const Quantization& w, std::size_t rank, int64_t axis,
                  int64_t channels) {
  // Unread (a plan from sizes): the fusion reads the weights' type and dims, not their bytes.
  if (!is_unread_weight(graph, w.data) && !is_constant(graph, w.data)) return false;
  const TensorData& data = *graph.value(w.data).initializer;
  if (!is_8_bit(data.dtype) || data.dims.size() != rank) return false;
  const auto fits = [&](ValueId v) {
    if (v == kNoValue) return true;
    const int64_t count = count_of(graph, v);
    if (count == 1) return true;
    const int64_t own = w.axis < 0 ? w.axis + static_cast<int64_t>(rank) : w.axis;
    return count == channels && own == axis;
  };
  return fits(w.scale) && fits(w.zero);
}

bool per_tensor(const Graph& graph, const Quantization& q) {
  return count_of(graph, q.scale) == 1 && (q.zero == kNoValue || count_of(graph, q.zero) == 1);
}

// The int32 bias input of the fused Conv, or kNoValue when the bias cannot be expressed.
ValueId bias_of(Graph& graph, const Match& m, ValueId bias, const std::string& base) {
  const float x_scale = floats_of(graph, m.x.scale)[0];
  std::vector<float> w_scale = floats_of(graph, m.w.scale);
  w_scale.resize(static_cast<std::size_t>(m.channels), w_scale[0]);
  if (auto q = dequantized(graph, bias)) {
    if (!is_constant(graph, q->data) ||
        graph.value(q->data).initializer->dtype != DataType::kInt32 ||
        count_of(graph, q->data) != m.channels) {
      return kNoValue;
    }
    for (int64_t zero : zeros_of(graph, q->zero)) {
      if (zero != 0) return kNoValue;
    }
    std::vector<float> scale = floats_of(graph, q->scale);
    scale.resize(static_cast<std::size_t>(m.channels), scale[0]);
    for (int64_t c = 0; c < m.channels; ++c) {
      const float expected = x_scale * w_scale[c];
      if (std::abs(scale[c] - expected) > 1e-5f * std::abs(expected)) return kNoValue;
    }
    return q->data;
  }
  if (!is_constant(graph, bias) || graph.value(bias).initializer->dtype != DataType::kFloat ||
      count_of(graph, bias) != m.channels) {
    return kNoValue;
  }
  const std::vector<float> values = floats_of(graph, bias);
  std::vector<int32_t> quantized(values.size());
  for (std::size_t c = 0; c < values.size(); ++c) {
    const double v = std::nearbyint(static_cast<double>(values[c]) / (x_scale * w_scale[c]));
    if (!(std::abs(v) <= std::numeric_limits<int32_t>::max())) return kNoValue;
    quantized[c] = static_cast<int32_t>(v);
  }
  return graph.add_initializer(
      unique_value_name(graph, base + "_bias_quantized"),
      TensorData::from<int32_t>(DataType::kInt32, {static_cast<int64_t>(quantized.size())},
                                quantized));
}

// The node whose output QuantizeLinear `quantize` (operands `y`) alone reads, seen through a
// Relu (set in `relu`) where quantizing clamps at the same 0: where y's zero point is its
// type's lowest value (as ONNX Runtime drops such a Relu). -1 where none fits.
NodeId quantized_producer(const Graph& graph, NodeId quantize, const Quantization& y,
                          const std::vector<bool>& read_by_bodies, NodeId& relu) {
  NodeId producer = graph.value(y.data).producer;
  if (only_reader(graph, y.data, read_by_bodies) != quantize) return -1;
  if (is_single_output_op(graph, producer, "Relu")) {
    const std::vector<int64_t> zero = zeros_of(graph, y.zero);
    const DataType type =
        y.zero == kNoValue ? DataType::kUInt8 : graph.value(y.zero).initializer->dtype;
    if (zero.empty() || zero[0] != (type == DataType::kInt8 ? -128 : 0)) return -1;
    relu = producer;
    const ValueId before = graph.node(producer).inputs[0];
    if (only_reader(graph, before, read_by_bodies) != producer) return -1;
    producer = graph.value(before).producer;
  }
  return producer;
}

// The Conv or MatMul (and Relu) computing QuantizeLinear `node`'s input, with its operands.
std::optional<Match> match(const Graph& graph, NodeId node,
                           const std::vector<bool>& read_by_bodies) {
  Match m;
  m.quantize = node;
  auto y = quantization_of(graph, node, "QuantizeLinear");
  if (!y || !per_tensor(graph, *y)) return std::nullopt;
  m.y = *y;
  const NodeId producer = quantized_producer(graph, node, *y, read_by_bodies, m.relu);
  if (producer < 0) return std::nullopt;
  const bool conv = is_single_output_op(graph, producer, "Conv");
  const bool gemm = is_single_output_op(graph, producer, "Gemm");
  if (!conv && !gemm && !is_single_output_op(graph, producer, "MatMul")) return std::nullopt;
  const Node& product = graph.node(producer);
  if (product.attribute("activation") || product.inputs.size() < 2) return std::nullopt;
  m.product = producer;
  auto x = dequantized(graph, product.inputs[0]);
  auto w = dequantized(graph, product.inputs[1]);
  if (!x || !w || !per_tensor(graph, *x) || !is_8_bit(quantized_type(graph, x->data))) {
    return std::nullopt;
  }
  const TensorData* weights = is_unread_weight(graph, w->data) || is_constant(graph, w->data)
                                  ? &*graph.value(w->data).initializer
                                  : nullptr;
  if (!weights || weights->dims.empty()) return std::nullopt;
  const std::size_t rank = weights->dims.size();
  if (conv) {
    m.channels = weights->dims[0];
    if (rank < 3 || !fits_weights(graph, *w, rank, 0, m.channels)) return std::nullopt;
  } else if (gemm) {
    // Weights [K, N], or [N, K] under transB; their channels are the output columns.
    const int64_t axis = product.int_attribute("transB", 0) != 0 ? 0 : 1;
    if (rank != 2 || product.int_attribute("transA", 0) != 0 ||
        product.float_attribute("alpha", 1.0f) != 1.0f ||
        product.float_attribute("beta", 1.0f) != 1.0f) {
      return std::nullopt;
    }
    m.channels = weights->dims[static_cast<std::size_t>(axis)];
    if (!fits_weights(graph, *w, 2, axis, m.channels)) return std::nullopt;
  } else {
    m.channels = weights->dims.back();
    if (rank != 2 || product.inputs.size() != 2 || !fits_weights(graph, *w, 2, 1, m.channels)) {
      return std::nullopt;
    }
  }
  m.x = *x;
  m.w = *w;
  return m;
}

// Gemm's weights as the [K, N] a product reads: as they are, or transposed into a new constant.
ValueId product_weights(Graph& graph, const Node& gemm, ValueId weights, const std::string& base) {
  if (gemm.int_attribute("transB", 0) == 0) return weights;
  const TensorData& data = *graph.value(weights).initializer;
  const int64_t n = data.dims[0], k = data.dims[1];
  const std::string name = unique_value_name(graph, base + "_weights_transposed");
  if (!data.bytes) {  // Left unread: the transposed copy as sizes only.
    note_unread_weight_need(graph, weights);
    return graph.add_initializer(name, TensorData{data.dtype, {k, n}, nullptr, nullptr});
  }
  const std::size_t size = element_size(data.dtype);  // One byte: u8 or i8.
  auto bytes = std::make_shared<std::vector<std::byte>>(data.bytes->size());
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t column = 0; column < k; ++column) {
      std::memcpy(bytes->data() + (column * n + row) * size,
                  data.bytes->data() + (row * k + column) * size, size);
    }
  }
  return graph.add_initializer(name, TensorData{data.dtype, {k, n}, std::move(bytes), nullptr});
}

bool try_fuse(Graph& graph, NodeId node, const std::vector<bool>& read_by_bodies,
              PassResult& result) {
  std::optional<Match> m = match(graph, node, read_by_bodies);
  if (!m) return false;
  const Node product = graph.node(m->product);
  const bool conv = product.op_type == "Conv";
  const bool gemm = product.op_type == "Gemm";
  const std::string base =
      product.name.empty() ? graph.value(product.outputs[0]).name : product.name;
  if ((conv || gemm) && product.inputs.size() > 2 && product.inputs[2] != kNoValue) {
    m->bias = bias_of(graph, *m, product.inputs[2], base);
    if (m->bias == kNoValue) return false;
  }
  const ValueId output = graph.node(node).outputs[0];
  const ValueId weights = gemm ? product_weights(graph, product, m->w.data, base) : m->w.data;
  std::vector<ValueId> inputs = {
      m->x.data,
      m->x.scale,
      zero_value(graph, m->x, quantized_type(graph, m->x.data), base + "_x"),
      weights,
      m->w.scale,
      zero_value(graph, m->w, graph.value(m->w.data).dtype, base + "_w"),
      m->y.scale,
      zero_value(graph, m->y, DataType::kUInt8, base + "_y")};
  graph.remove_node(node);
  if (m->relu >= 0) graph.remove_node(m->relu);
  graph.remove_node(m->product);
  if (conv) {
    if (m->bias != kNoValue) inputs.push_back(m->bias);
    graph.add_node("QLinearConv", inputs, {output}, product.attributes, product.name);
    result.add("Conv nodes fused into QLinearConv");
  } else if (m->bias != kNoValue) {
    // ONNX has no int8 product with a bias; ONNX Runtime's contrib QGemm is one.
    inputs.insert(inputs.begin() + 6, m->bias);
    graph.opset_imports.emplace("com.microsoft", 1);
    graph.add_node("QGemm", inputs, {output}, {}, product.name, "com.microsoft");
    result.add("Gemm nodes fused into com.microsoft.QGemm");
  } else {
    graph.add_node("QLinearMatMul", inputs, {output}, {}, product.name);
    result.add(gemm ? "Gemm nodes fused into QLinearMatMul"
                    : "MatMul nodes fused into QLinearMatMul");
  }
  if (m->relu >= 0) result.add("Relu nodes fused into a QLinear op");
  return true;
}

// What the Add fusion reads: the operands, and the nodes it replaces.
struct AddMatch {
  NodeId add = -1, relu = -1;
  Quantization a, b, y;
};

// The Add (and Relu) of two per-tensor DequantizeLinear'd values of QuantizeLinear `node`'s
// type computing its input.
std::optional<AddMatch> match_add(const Graph& graph, NodeId node,
                                  const std::vector<bool>& read_by_bodies) {
  AddMatch m;
  auto y = quantization_of(graph, node, "QuantizeLinear");
  if (!y || !per_tensor(graph, *y)) return std::nullopt;
  m.y = *y;
  m.add = quantized_producer(graph, node, *y, read_by_bodies, m.relu);
  if (m.add < 0 || !is_single_output_op(graph, m.add, "Add")) return std::nullopt;
  const Node& add = graph.node(m.add);
  if (add.inputs.size() != 2) return std::nullopt;
  auto a = dequantized(graph, add.inputs[0]);
  auto b = dequantized(graph, add.inputs[1]);
  if (!a || !b || !per_tensor(graph, *a) || !per_tensor(graph, *b)) return std::nullopt;
  const DataType type = quantized_type(graph, graph.node(node).outputs[0]);
  if (!is_8_bit(type) || quantized_type(graph, a->data) != type ||
      quantized_type(graph, b->data) != type) {
    return std::nullopt;
  }
  m.a = *a;
  m.b = *b;
  return m;
}

// ONNX has no int8 Add; ONNX Runtime's contrib QLinearAdd is one, computed as its kernel does.
bool try_fuse_add(Graph& graph, NodeId node, const std::vector<bool>& read_by_bodies,
                  PassResult& result) {
  std::optional<AddMatch> m = match_add(graph, node, read_by_bodies);
  if (!m) return false;
  const Node add = graph.node(m->add);
  const std::string base = add.name.empty() ? graph.value(add.outputs[0]).name : add.name;
  const ValueId output = graph.node(node).outputs[0];
  const DataType type = quantized_type(graph, output);
  std::vector<ValueId> inputs = {m->a.data,
                                 m->a.scale,
                                 zero_value(graph, m->a, type, base + "_a"),
                                 m->b.data,
                                 m->b.scale,
                                 zero_value(graph, m->b, type, base + "_b"),
                                 m->y.scale,
                                 zero_value(graph, m->y, type, base + "_y")};
  graph.remove_node(node);
  if (m->relu >= 0) graph.remove_node(m->relu);
  graph.remove_node(m->add);
  graph.opset_imports.emplace("com.microsoft", 1);
  graph.add_node("QLinearAdd", inputs, {output}, {}, add.name, "com.microsoft");
  result.add("Add nodes fused into com.microsoft.QLinearAdd");
  if (m->relu >= 0) result.add("Relu nodes fused into a QLinear op");
  return true;
}

// Whether `a` and `b` (per tensor) are one map: equal scales and zero points (absent: 0).
bool same_quantization(const Graph& graph, const Quantization& a, const Quantization& b) {
  return floats_of(graph, a.scale) == floats_of(graph, b.scale) &&
         zeros_of(graph, a.zero) == zeros_of(graph, b.zero);
}

// The node QuantizeLinear `node` (per tensor, onto 8-bit `type`) alone reads the output of, when
// it is a single-output `op`; -1 otherwise.
NodeId quantized_op(const Graph& graph, NodeId node, std::string_view op,
                    const std::vector<bool>& read_by_bodies, Quantization& y, DataType& type) {
  auto q = quantization_of(graph, node, "QuantizeLinear");
  if (!q || !per_tensor(graph, *q)) return -1;
  y = *q;
  type = quantized_type(graph, graph.node(node).outputs[0]);
  if (!is_8_bit(type) || only_reader(graph, y.data, read_by_bodies) != node) return -1;
  const NodeId producer = graph.value(y.data).producer;
  return is_single_output_op(graph, producer, op) ? producer : -1;
}

// The DequantizeLinear (per tensor, from 8-bit `type`) computing `value`.
std::optional<Quantization> dequantized_from(const Graph& graph, ValueId value, DataType type) {
  auto x = dequantized(graph, value);
  if (!x || !per_tensor(graph, *x) || quantized_type(graph, x->data) != type) return std::nullopt;
  return x;
}

// The per-tensor DequantizeLinear'd parts of `concat`, each from 8-bit `type`; nullopt when
// one is not.
std::optional<std::vector<Quantization>> dequantized_parts(const Graph& graph, const Node& concat,
                                                           DataType type) {
  std::vector<Quantization> parts;
  for (ValueId input : concat.inputs) {
    auto x = dequantized_from(graph, input, type);
    if (!x) return std::nullopt;
    parts.push_back(*x);
  }
  return parts;
}

// Computes `replaced` (a Concat of `parts`) in 8 bits under map `y` into `output`: a Concat of
// the 8-bit values where every part has y's map, else ONNX Runtime's com.microsoft QLinearConcat
// (inputs y_scale, y_zero, then x, x_scale, x_zero per part), whose kernel requantizes each
// part as DequantizeLinear → QuantizeLinear would.
void add_eight_bit_concat(Graph& graph, const Node& replaced,
                          const std::vector<Quantization>& parts, const Quantization& y,
                          DataType type, ValueId output, PassResult& result) {
  bool same = true;
  for (const Quantization& x : parts) same = same && same_quantization(graph, x, y);
  const std::string base =
      replaced.name.empty() ? graph.value(replaced.outputs[0]).name : replaced.name;
  std::vector<ValueId> inputs;
  if (!same) inputs = {y.scale, zero_value(graph, y, type, base + "_y")};
  for (std::size_t k = 0; k < parts.size(); ++k) {
    inputs.push_back(parts[k].data);
    if (same) continue;
    inputs.push_back(parts[k].scale);
    inputs.push_back(zero_value(graph, parts[k], type, fmt::format("{}_x{}", base, k)));
  }
  if (same) {
    graph.add_node("Concat", inputs, {output}, replaced.attributes, replaced.name);
    result.add("Concat nodes moved onto 8-bit values");
  } else {
    graph.opset_imports.emplace("com.microsoft", 1);
    graph.add_node("QLinearConcat", inputs, {output}, replaced.attributes, replaced.name,
                   "com.microsoft");
    result.add("Concat nodes fused into com.microsoft.QLinearConcat");
  }
}

bool positive_scale(const Graph& graph, const Quantization& q) {
  return floats_of(graph, q.scale)[0] > 0;
}

// The Concat alone read by MaxPool `pool` along the batch or the channels, which the pool keeps
// apart, of DequantizeLinear'd parts of `type` with positive scales (so that each part's
// requantization, a non-decreasing map, commutes with the max); -1 otherwise.
NodeId pooled_concat(const Graph& graph, NodeId pool, DataType type,
                     const std::vector<bool>& read_by_bodies) {
  const ValueId input = graph.node(pool).inputs[0];
  const NodeId concat = graph.value(input).producer;
  if (!is_single_output_op(graph, concat, "Concat") ||
      only_reader(graph, input, read_by_bodies) != pool) {
    return -1;
  }
  const Node& node = graph.node(concat);
  const Shape& shape = graph.value(input).shape;
  int64_t axis = node.int_attribute("axis", 0);
  if (axis < 0) axis = shape.rank_known ? axis + static_cast<int64_t>(shape.rank()) : -1;
  if (axis != 0 && axis != 1) return -1;
  auto parts = dequantized_parts(graph, node, type);
  if (!parts) return -1;
  for (const Quantization& x : *parts) {
    if (!positive_scale(graph, x)) return -1;
  }
  return concat;
}

// DequantizeLinear → MaxPool → QuantizeLinear of one map with a positive scale pools the 8-bit
// values as they are: the map is increasing, so the max commutes with it, and quantizing a
// dequantized value gives it back (as ONNX Runtime drops these QDQ pairs). A Concat of
// DequantizeLinear'd parts before the pool is requantized to the pool's map first (8-bit, as
// try_fuse_concat writes it), then pooled.
bool try_fuse_max_pool(Graph& graph, NodeId node, const std::vector<bool>& read_by_bodies,
                       PassResult& result) {
  Quantization y;
  DataType type = DataType::kUndefined;
  const NodeId pool = quantized_op(graph, node, "MaxPool", read_by_bodies, y, type);
  if (pool < 0 || !positive_scale(graph, y)) return false;
  auto x = dequantized_from(graph, graph.node(pool).inputs[0], type);
  const NodeId concat = x ? -1 : pooled_concat(graph, pool, type, read_by_bodies);
  if (x ? !same_quantization(graph, *x, y) : concat < 0) return false;
  const Node replaced = graph.node(pool);
  const ValueId output = graph.node(node).outputs[0];
  graph.remove_node(node);
  graph.remove_node(pool);
  ValueId input = x ? x->data : kNoValue;
  if (concat >= 0) {
    const Node joined = graph.node(concat);
    const std::string name =
        unique_value_name(graph, graph.value(joined.outputs[0]).name + "_quantized");
    const Shape shape = graph.value(joined.outputs[0]).shape;
    input = graph.add_value(name, type, shape);
    graph.remove_node(concat);
    add_eight_bit_concat(graph, joined, *dequantized_parts(graph, joined, type), y, type, input,
                         result);
  }
  graph.add_node("MaxPool", {input}, {output}, replaced.attributes, replaced.name);
  result.add("MaxPool nodes moved onto 8-bit values");
  return true;
}

// DequantizeLinear'd parts → Concat → QuantizeLinear: the Concat in 8 bits
// (add_eight_bit_concat).
bool try_fuse_concat(Graph& graph, NodeId node, const std::vector<bool>& read_by_bodies,
                     PassResult& result) {
  Quantization y;
  DataType type = DataType::kUndefined;
  const NodeId concat = quantized_op(graph, node, "Concat", read_by_bodies, y, type);
  if (concat < 0) return false;
  const Node replaced = graph.node(concat);
  auto parts = dequantized_parts(graph, replaced, type);
  if (!parts) return false;
  const ValueId output = graph.node(node).outputs[0];
  graph.remove_node(node);
  graph.remove_node(concat);
  add_eight_bit_concat(graph, replaced, *parts, y, type, output, result);
  return true;
}

}  // namespace

PassResult fuse_qdq(Graph& graph) {
  PassResult result{"QDQ fusion", {}, {}};
  const std::vector<bool> read_by_bodies = values_read_by_bodies(graph);
  for (NodeId id : graph.node_ids()) {
    if (graph.node(id).removed) continue;
    if (!try_fuse(graph, id, read_by_bodies, result) &&
        !try_fuse_add(graph, id, read_by_bodies, result) &&
        !try_fuse_max_pool(graph, id, read_by_bodies, result)) {
      try_fuse_concat(graph, id, read_by_bodies, result);
    }
  }
  // What stays in float between one DequantizeLinear and a QuantizeLinear: a table.
  result.merge_counts(fuse_qdq_tables(graph));
  return result;
}

}  // namespace cleave
