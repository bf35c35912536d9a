// The graph verifier: the invariants every pass may assume and every import must establish.
#include "ir/verify.h"

#include <fmt/core.h>

#include <set>

namespace cleave {

namespace {

// Ops whose inputs and first output all share one element type.
const std::set<std::string, std::less<>> kSameTypeOps = {"Add",           "Sub",
                                                         "Mul",           "Div",
                                                         "Max",           "Min",
                                                         "Sum",           "Mean",
                                                         "Relu",          "Sigmoid",
                                                         "Tanh",          "Conv",
                                                         "ConvTranspose", "Gemm",
                                                         "MatMul",        "MaxPool",
                                                         "AveragePool",   "GlobalAveragePool",
                                                         "GlobalMaxPool", "Softmax",
                                                         "Concat",        "BatchNormalization",
                                                         "LRN",           "LeakyRelu",
                                                         "Elu",           "Exp",
                                                         "Log",           "Sqrt",
                                                         "Abs",           "Neg",
                                                         "Erf",           "HardSigmoid",
                                                         "PRelu"};

void check_data_size(const Graph& graph, const Value& value) {
  const TensorData& t = *value.initializer;
  int64_t count = 0;
  try {
    count = t.element_count();
  } catch (const Error& e) {
    throw Error(
        fmt::format("initializer '{}' of graph '{}': {}", value.name, graph.name, e.what()));
  }
  if (t.bytes && element_size(t.dtype) > 0 &&
      t.bytes->size() != static_cast<std::size_t>(count) * element_size(t.dtype)) {
    throw Error(fmt::format("initializer '{}': holds {} bytes, its shape needs {}", value.name,
                            t.bytes->size(), count * element_size(t.dtype)));
  }
  if (value.dtype != t.dtype) {
    throw Error(fmt::format("initializer '{}': value type {} differs from its data type {}",
                            value.name, dtype_name(value.dtype), dtype_name(t.dtype)));
  }
}

void check_shape(const Graph& graph, const Value& value) {
  if (!value.shape.is_static()) return;
  try {
    value.shape.element_count();
  } catch (const Error& e) {
    throw Error(fmt::format("value '{}' of graph '{}': {}", value.name, graph.name, e.what()));
  }
}

}  // namespace

void verify_graph(const Graph& graph, const VerifyOptions& options) {
  std::vector<NodeId> order = graph.topological_order();  // Throws on a cycle.

  for (std::size_t id = 0; id < graph.value_capacity(); ++id) {
    const Value& value = graph.value(static_cast<ValueId>(id));
    if (value.initializer) {
      check_data_size(graph, value);
      if (value.producer >= 0) {
        throw Error(fmt::format("value '{}' is both an initializer and the output of node {}",
                                value.name, graph.describe(value.producer)));
      }
    }
    check_shape(graph, value);
  }

  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.op_type.empty()) throw Error(fmt::format("node #{} has no op type", id));
    for (ValueId input : node.inputs) {
      if (input == kNoValue) continue;
      const Value& v = graph.value(input);
      bool defined = v.producer >= 0 || v.is_graph_input || v.initializer.has_value();
      if (!defined && !options.allow_outer_scope_values) {
        throw Error(
            fmt::format("node {}: input '{}' is not defined by any node, graph input or "
                        "initializer",
                        graph.describe(id), v.name));
      }
    }
    if (node.domain.empty() && kSameTypeOps.count(node.op_type)) {
      DataType common = DataType::kUndefined;
      std::string first;
      auto check = [&](ValueId vid) {
        if (vid == kNoValue) return;
        const Value& v = graph.value(vid);
        if (v.dtype == DataType::kUndefined) return;
        if (common == DataType::kUndefined) {
          common = v.dtype;
          first = v.name;
        } else if (v.dtype != common) {
          throw Error(fmt::format("node {}: '{}' is {} but '{}' is {}; {} needs one element type",
                                  graph.describe(id), v.name, dtype_name(v.dtype), first,
                                  dtype_name(common), node.op_type));
        }
      };
      // BatchNormalization's mean/var and Conv's bias share the type too; Gemm C as well.
      for (ValueId input : node.inputs) check(input);
      if (!node.outputs.empty()) check(node.outputs[0]);
    }
  }

  for (ValueId output : graph.outputs()) {
    const Value& v = graph.value(output);
    if (v.producer < 0 && !v.is_graph_input && !v.initializer) {
      throw Error(fmt::format("graph output '{}' is not produced by any node", v.name));
    }
  }
}

}  // namespace cleave
