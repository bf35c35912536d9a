// Constant folding with the runtime's kernels, plus Shape/Size of statically shaped values.
#include "passes/constant_folding.h"

#include <fmt/core.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "passes/dead_code.h"
#include "passes/deferred_weights.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

namespace {

// Ops whose result differs from run to run; Dropout is left to Identity/Dropout removal,
// which knows when it is the identity.
const std::set<std::string, std::less<>> kNonDeterministicOps = {
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
    "Multinomial",  "Bernoulli",        "Dropout"};

enum class Outcome { kFolded, kNoKernel, kTooLarge, kRefused };

bool has_body(const Node& node) {
  return std::any_of(node.attributes.begin(), node.attributes.end(), [](const auto& entry) {
    return entry.second.kind == AttributeKind::kGraph ||
           entry.second.kind == AttributeKind::kGraphs;
  });
}

std::optional<TensorData> constant_attribute_value(const Node& node) {
  for (const auto& [key, a] : node.attributes) {
    if (key == "value" && a.kind == AttributeKind::kTensor) {
      if (!a.t.has_data()) return std::nullopt;
      return a.t;
    }
    if (key == "value_float" && a.kind == AttributeKind::kFloat) {
      return TensorData::from<float>(DataType::kFloat, {}, {a.f});
    }
    if (key == "value_floats" && a.kind == AttributeKind::kFloats) {
      return TensorData::from<float>(DataType::kFloat, {static_cast<int64_t>(a.floats.size())},
                                     a.floats);
    }
    if (key == "value_int" && a.kind == AttributeKind::kInt) {
      return TensorData::from<int64_t>(DataType::kInt64, {}, {a.i});
    }
    if (key == "value_ints" && a.kind == AttributeKind::kInts) {
      return TensorData::from<int64_t>(DataType::kInt64, {static_cast<int64_t>(a.ints.size())},
                                       a.ints);
    }
    if (key == "value_string" && a.kind == AttributeKind::kString) {
      return TensorData{
          DataType::kString, {}, nullptr, std::make_shared<const std::vector<std::string>>(1, a.s)};
    }
    if (key == "value_strings" && a.kind == AttributeKind::kStrings) {
      return TensorData{DataType::kString,
                        {static_cast<int64_t>(a.strings.size())},
                        nullptr,
                        std::make_shared<const std::vector<std::string>>(a.strings)};
    }
  }
  return std::nullopt;  // sparse_value, or a malformed node the runtime will report.
}

// Shape (with opset-15 start/end) or Size of a value whose shape is fully known.
std::optional<TensorData> static_shape_result(const Graph& graph, const Node& node) {
  if (node.inputs.size() != 1 || node.inputs[0] == kNoValue) return std::nullopt;
  const Shape& shape = graph.value(node.inputs[0]).shape;
  if (!shape.is_static()) return std::nullopt;
  std::vector<int64_t> sizes = shape.sizes();
  if (node.op_type == "Size") {
    int64_t count = 1;
    for (int64_t size : sizes) count *= size;  // Static shapes were checked not to overflow.
    return TensorData::from<int64_t>(DataType::kInt64, {}, {count});
  }
  auto rank = static_cast<int64_t>(sizes.size());
  auto clamp = [rank](int64_t axis) {
    return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank);
  };
  int64_t start = clamp(node.int_attribute("start", 0));
  int64_t end = clamp(node.int_attribute("end", rank));
  std::vector<int64_t> part;
  if (start < end) part.assign(sizes.begin() + start, sizes.begin() + end);
  return TensorData::from<int64_t>(DataType::kInt64, {static_cast<int64_t>(part.size())}, part);
}

TensorData to_tensor_data(const Tensor& tensor) {
  auto bytes = std::make_shared<std::vector<std::byte>>(tensor.byte_size());
  if (!bytes->empty()) std::memcpy(bytes->data(), tensor.raw(), bytes->size());
  return TensorData{tensor.dtype(), tensor.shape(), std::move(bytes), nullptr};
}

// Runs single nodes on constant inputs with the runtime's kernels.
class NodeEvaluator {
 public:
  explicit NodeEvaluator(int64_t max_bytes)
      : max_bytes_(max_bytes), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  Outcome evaluate(const Graph& graph, NodeId id, std::vector<TensorData>& results) {
    const Node& node = graph.node(id);
    const KernelInfo* info = nullptr;
    try {
      info = &kernel_for(graph, id);
    } catch (const UnsupportedError&) {
      return Outcome::kNoKernel;
    }
    std::vector<Tensor> input_tensors(node.inputs.size());
    std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
    std::vector<bool> constant(node.inputs.size(), false);
    for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (node.inputs[slot] == kNoValue) continue;
      const TensorData& data = *graph.value(node.inputs[slot]).initializer;
      if (!data.bytes) return Outcome::kNoKernel;  // String tensors: no kernel reads them.
      input_tensors[slot] = Tensor::borrow(data.dtype, data.dims, data.bytes->data());
      inputs[slot] = &input_tensors[slot];
      constant[slot] = true;
    }
    // The executor's NodeRunner makes the same check: the first input's type selects support.
    if (!inputs.empty() && inputs[0] &&
        std::find(info->dtypes.begin(), info->dtypes.end(), inputs[0]->dtype()) ==
            info->dtypes.end()) {
      return Outcome::kNoKernel;
    }
    try {
      KernelContext context{graph,   id, node, opset_of(graph, node), inputs, constant,
                            engine_, 1,  false};
      std::unique_ptr<Kernel> kernel = info->create(context);
      std::vector<OutputSpec> specs = kernel->output_specs();
      if (specs.size() < node.outputs.size()) return Outcome::kRefused;
      // Sizes are checked before anything is allocated: a huge Expand must not be attempted.
      int64_t total = 0;
      for (const OutputSpec& spec : specs) {
        if (element_size(spec.dtype) == 0) return Outcome::kRefused;
        std::size_t bytes =
            spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
        if (bytes > static_cast<std::size_t>(max_bytes_ - total)) return Outcome::kTooLarge;
        total += static_cast<int64_t>(bytes);
      }
      std::vector<Tensor> outputs(specs.size());
      std::vector<Tensor*> output_pointers;
      for (std::size_t i = 0; i < specs.size(); ++i) {
        const OutputSpec& spec = specs[i];
        if (spec.alias_of >= 0) {
          outputs[i] = Tensor::borrow(spec.dtype, spec.shape, inputs.at(spec.alias_of)->raw());
        } else if (spec.layout) {
          outputs[i] = Tensor::view(spec.dtype, spec.shape,
                                    std::make_shared<Buffer>(spec.layout->get_size()));
          outputs[i].set_layout(spec.layout);
        } else {
          outputs[i] = Tensor::allocate(spec.dtype, spec.shape);
        }
        output_pointers.push_back(&outputs[i]);
      }
      kernel->run(inputs, output_pointers, stream_);
      stream_.wait();
      results.clear();
      for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        results.push_back(to_tensor_data(to_plain(outputs[i], engine_, stream_)));
      }
    } catch (const UnsupportedError&) {
      return Outcome::kNoKernel;
    } catch (const Error&) {
      // Invalid attributes or inputs: the runtime reports them when the node runs.
      return Outcome::kRefused;
    } catch (const dnnl::error&) {
      return Outcome::kRefused;
    }
    return Outcome::kFolded;
  }

 private:
  int64_t max_bytes_;
  dnnl::engine engine_;
  dnnl::stream stream_;
};

void replace_by_initializers(Graph& graph, NodeId id, std::vector<TensorData> results) {
  std::vector<ValueId> outputs = graph.node(id).outputs;
  graph.remove_node(id);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    Value& v = graph.value(outputs[i]);
    v.dtype = results[i].dtype;
    v.shape = Shape::of(results[i].dims);
    v.initializer = std::move(results[i]);
  }
}

// Ops whose fold moves its first input's elements and nothing else: with a weight left in its
// file there, a whole load's fold is certain from the output's inferred shape and type.
const std::set<std::string, std::less<>> kMovingOps = {"Transpose", "Reshape",   "Flatten",
                                                       "Squeeze",   "Unsqueeze", "Identity"};

// Node `id` alone, its inputs initializers as they are now (a weight left unread without its
// bytes): what its fold is made from when the fingerprint asks for it.
Graph node_alone(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  Graph alone;
  alone.opset_imports = graph.opset_imports;
  std::vector<ValueId> inputs;
  for (ValueId v : node.inputs) {
    if (v == kNoValue) {
      inputs.push_back(kNoValue);
      continue;
    }
    const Value& value = graph.value(v);
    const std::optional<ValueId> seen = alone.find_value(value.name);
    inputs.push_back(seen ? *seen : alone.add_initializer(value.name, *value.initializer));
  }
  const Value& out = graph.value(node.outputs[0]);
  const ValueId output = alone.add_value(out.name, out.dtype, out.shape);
  alone.add_node(node.op_type, inputs, {output}, node.attributes, node.name, node.domain);
  return alone;
}

// Folds node `id`, whose first input is a weight left unread (planning from sizes), as sizes
// only, recording how its bytes are made (DeferredWeights); false where the outcome of a whole
// load's fold is not certain, which then needs the bytes.
bool fold_deferred(Graph& graph, NodeId id, int64_t max_bytes) {
  const Node& node = graph.node(id);
  if (!deferring_weights() || !kMovingOps.count(node.op_type) || node.outputs.size() != 1 ||
      node.inputs.empty() || !is_unread_weight(graph, node.inputs[0])) {
    return false;
  }
  for (std::size_t slot = 1; slot < node.inputs.size(); ++slot) {
    const ValueId v = node.inputs[slot];
    if (v != kNoValue && !graph.value(v).initializer->has_data()) return false;
  }
  const TensorData& in = *graph.value(node.inputs[0]).initializer;
  const Value& out = graph.value(node.outputs[0]);
  if (!out.shape.is_static() || out.dtype != in.dtype || element_size(in.dtype) == 0 ||
      out.shape.element_count() != in.element_count() ||
      plain_byte_size(out.dtype, out.shape.sizes()) > static_cast<std::size_t>(max_bytes)) {
    return false;
  }
  try {
    const KernelInfo& info = kernel_for(graph, id);
    if (std::find(info.dtypes.begin(), info.dtypes.end(), in.dtype) == info.dtypes.end())
      return false;
  } catch (const UnsupportedError&) {
    return false;
  }
  auto alone = std::make_shared<const Graph>(node_alone(graph, id));
  const NodeId alone_id = alone->node_ids().front();
  const auto made = defer_rewrite(
      graph, node.inputs, [alone, alone_id, max_bytes](const std::vector<TensorData>& inputs) {
        Graph filled = *alone;
        const std::vector<ValueId> slots = filled.node(alone_id).inputs;
        for (std::size_t slot = 0; slot < slots.size(); ++slot) {
          if (slots[slot] != kNoValue && inputs[slot].bytes)
            filled.value(slots[slot]).initializer->bytes = inputs[slot].bytes;
        }
        std::vector<TensorData> results;
        if (NodeEvaluator(max_bytes).evaluate(filled, alone_id, results) != Outcome::kFolded) {
          throw Error(fmt::format("constant folding: {} did not fold as planned",
                                  filled.describe(alone_id)));
        }
        return std::move(results.front());
      });
  const ValueId output = node.outputs[0];
  replace_by_initializers(graph, id, {TensorData{out.dtype, out.shape.sizes(), {}, {}}});
  record_deferred_weight(graph, output, made);
  return true;
}

}  // namespace

PassResult fold_constants(Graph& graph, const ConstantFoldingOptions& options) {
  PassResult result{"constant folding", {}, {}};
  std::optional<NodeEvaluator> evaluator;  // Made on first use: it starts a oneDNN engine.
  const std::vector<NodeId> order = graph.topological_order();
  // A node no output depends on is left to dead code: folding it could only cost memory (the
  // float weights of the DequantizeLinear nodes that QDQ fusion leaves unread are 4x the int8
  // model).
  const std::vector<bool> live = live_values(graph, order);
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.outputs.empty() || has_body(node) || kNonDeterministicOps.count(node.op_type))
      continue;
    if (std::none_of(node.outputs.begin(), node.outputs.end(),
                     [&](ValueId v) { return live[v]; })) {
      result.add("dead nodes left unfolded");
      continue;
    }
    bool standard = node.domain.empty() || node.domain == "ai.onnx";
    if (std::any_of(node.outputs.begin(), node.outputs.end(),
                    [&](ValueId v) { return graph.value(v).is_graph_output; })) {
      continue;
    }
    if (standard && node.op_type == "Constant") {
      if (auto data = constant_attribute_value(node)) {
        replace_by_initializers(graph, id, {std::move(*data)});
        result.add("Constant nodes made initializers");
      }
      continue;
    }
    if (standard && (node.op_type == "Shape" || node.op_type == "Size")) {
      if (auto data = static_shape_result(graph, node)) {
        replace_by_initializers(graph, id, {std::move(*data)});
        result.add("Shape nodes folded from static shapes");
        continue;
      }
    }
    // Unread weights count as constants here: a node of constants only, one of them unread,
    // is one a whole load would fold, so its need is counted (unread_weight_needs).
    bool all_constant = std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId v) {
      return v == kNoValue || is_unread_weight(graph, v) || is_constant(graph, v);
    });
    if (!all_constant) continue;
    if (std::any_of(node.inputs.begin(), node.inputs.end(),
                    [&](ValueId v) { return is_unread_weight(graph, v); })) {
      if (fold_deferred(graph, id, options.max_folded_bytes)) {
        result.add("nodes folded");
        continue;
      }
      for (ValueId v : node.inputs) note_unread_weight_need(graph, v);
      continue;
    }
    if (!evaluator) evaluator.emplace(options.max_folded_bytes);
    std::vector<TensorData> results;
    switch (evaluator->evaluate(graph, id, results)) {
      case Outcome::kFolded:
        replace_by_initializers(graph, id, std::move(results));
        result.add("nodes folded");
        break;
      case Outcome::kNoKernel:
        result.add("nodes without kernel");
        break;
      case Outcome::kTooLarge:
        result.add("nodes over size cap");
        break;
      case Outcome::kRefused:
        result.add("nodes refused by their kernel");
        break;
    }
  }
  return result;
}

}  // namespace cleave
