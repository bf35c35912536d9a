// Static shapes from the runtime's kernels, for values ONNX's inference left open.
#include "frontend/shape_completion.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"
#include "runtime/kernel.h"
#include "runtime/node_runner.h"
#include "runtime/tensor.h"
#include "support/page_memory.h"

namespace cleave {

namespace {

// Ops whose output shapes follow from their inputs' shapes alone.
constexpr std::string_view kShapedByShapes =
    "Transpose Concat Flatten Identity Cast Gather GatherElements GatherND ScatterND Softmax "
    "LogSoftmax LayerNormalization MatMul Where Add Sub Mul Div Pow Mod Max Min Equal Less "
    "Greater LessOrEqual GreaterOrEqual And Or Not Neg Abs Sqrt Exp Log Erf Relu Sigmoid Tanh "
    "Reciprocal Floor Ceil Clip Gelu HardSwish HardSigmoid Dropout CumSum Trilu GlobalAveragePool "
    "GlobalMaxPool Gemm";
constexpr std::string_view kReductions =
    "ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare";

// Per op, the input slots whose contents (not only shapes) decide the output shapes. An op
// missing here is not tried: its kernel might read a stand-in's zeros as a size.
const std::map<std::string, std::vector<std::size_t>, std::less<>>& shape_deciding_inputs() {
  static const auto table = [] {
    std::map<std::string, std::vector<std::size_t>, std::less<>> t = {
        {"Reshape", {1}},     {"Expand", {1}},          {"Tile", {1}},
        {"Pad", {1, 3}},      {"Slice", {1, 2, 3, 4}},  {"Squeeze", {1}},
        {"Unsqueeze", {1}},   {"Split", {1}},           {"Resize", {1, 2, 3}},
        {"Range", {0, 1, 2}}, {"ConstantOfShape", {0}},
    };
    auto add_each = [&t](std::string_view names, std::vector<std::size_t> slots) {
      while (!names.empty()) {
        const std::size_t end = std::min(names.find(' '), names.size());
        t.emplace(std::string(names.substr(0, end)), slots);
        names.remove_prefix(std::min(end + 1, names.size()));
      }
    };
    add_each(kShapedByShapes, {});
    add_each(kReductions, {1});  // Opset 13+ (ReduceSum) and 18+ axes.
    return t;
  }();
  return table;
}

// Stand-ins larger than this are not made: such a value's shape is left to the run.
constexpr int64_t kMaxStandInElements = int64_t{1} << 24;

// Sets the shapes and types of `id`'s open outputs from its kernel; returns how many.
int complete_node(Graph& graph, NodeId id, dnnl::engine& engine) {
  const Node& node = graph.node(id);
  if (!node.domain.empty()) return 0;
  auto entry = shape_deciding_inputs().find(node.op_type);
  if (entry == shape_deciding_inputs().end()) return 0;

  std::vector<OutputSpec> specs;
  try {
    std::vector<Tensor> tensors(node.inputs.size());
    // Stand-ins only give their shapes: zeroing them (Tensor::allocate) was most of this
    // pass on retinanet_resnet50_fpn (0.3 s of page faults).
    std::vector<std::unique_ptr<ZeroMapping>> stand_ins;
    std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
    std::vector<bool> constant(node.inputs.size(), false);
    for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
      const ValueId input = node.inputs[slot];
      if (input == kNoValue) continue;
      const Value& v = graph.value(input);
      // A weight left in its file (planning from sizes) gives its shape as a stand-in, as an
      // input computed at run time does: only a shape-deciding one needs its bytes.
      const bool unread = is_unread_weight(graph, input);
      if (!unread && is_constant(graph, input)) {
        const TensorData& data = *v.initializer;
        if (!data.bytes) return 0;
        tensors[slot] = Tensor::borrow(data.dtype, data.dims, data.bytes->data());
        constant[slot] = true;
      } else {
        for (std::size_t deciding : entry->second) {
          if (deciding != slot) continue;
          note_unread_weight_need(graph, input);
          return 0;
        }
        // element_count throws Error for a product past int64 (a hostile shape). An unread
        // weight's size is its file's: its stand-in is mapped, never touched.
        if (!v.shape.is_static() || element_size(v.dtype) == 0 ||
            (!unread && v.shape.element_count() > kMaxStandInElements)) {
          return 0;
        }
        const auto elements = static_cast<std::size_t>(v.shape.element_count());
        stand_ins.push_back(std::make_unique<ZeroMapping>(elements * element_size(v.dtype)));
        tensors[slot] = Tensor::borrow(v.dtype, v.shape.sizes(), stand_ins.back()->data());
      }
      inputs[slot] = &tensors[slot];
    }
    const KernelInfo& info = kernel_for(graph, id);
    KernelContext context{graph,  id, node, opset_of(graph, node), inputs, constant,
                          engine, 1,  false};
    specs = info.create(context)->output_specs();
  } catch (const Error&) {
    return 0;  // UnsupportedError too: the run reports what it must.
  } catch (const dnnl::error&) {
    return 0;
  }
  if (specs.size() < node.outputs.size()) return 0;
  int completed = 0;
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueId output = node.outputs[i];
    if (output == kNoValue || graph.value(output).shape.is_static()) continue;
    Value& v = graph.value(output);
    v.shape = Shape::of(specs[i].shape);
    if (v.dtype == DataType::kUndefined) v.dtype = specs[i].dtype;
    ++completed;
  }
  return completed;
}

// The static dims of `value`'s shape, or of its initializer; empty when unknown.
std::vector<int64_t> known_dims(const Graph& graph, ValueId value) {
  if (value == kNoValue) return {};
  const Value& v = graph.value(value);
  if (v.shape.is_static()) return v.shape.sizes();
  return v.initializer ? v.initializer->dims : std::vector<int64_t>{};
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 && (a > 0) == (b > 0));
}

// A convolution's or pooling's output dims from its input's and its attributes, as ONNX's
// inference computes them (ceil_mode 0 only); empty where anything is unknown or odd.
std::vector<int64_t> windowed_dims(const Graph& graph, const Node& node) {
  const bool conv = node.op_type == "Conv";
  const std::vector<int64_t> x = known_dims(graph, node.inputs[0]);
  const std::vector<int64_t> w =
      conv && node.inputs.size() > 1 ? known_dims(graph, node.inputs[1]) : std::vector<int64_t>{};
  if (x.size() < 3 || (conv && w.size() != x.size()) || node.int_attribute("ceil_mode", 0) != 0)
    return {};
  const std::size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel = node.ints_attribute("kernel_shape");
  if (kernel.empty() && conv) kernel.assign(w.begin() + 2, w.end());
  std::vector<int64_t> strides = node.ints_attribute("strides");
  std::vector<int64_t> dilations = node.ints_attribute("dilations");
  std::vector<int64_t> pads = node.ints_attribute("pads");
  if (strides.empty()) strides.assign(spatial, 1);
  if (dilations.empty()) dilations.assign(spatial, 1);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  const std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial ||
      (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
       auto_pad != "VALID")) {
    return {};
  }
  std::vector<int64_t> out = {x[0], conv ? w[0] : x[1]};
  for (std::size_t a = 0; a < spatial; ++a) {
    constexpr int64_t kLimit = int64_t{1} << 30;  // Keeps the sums below in range.
    const int64_t in = x[a + 2], k = kernel[a], s = strides[a], d = dilations[a];
    if (in < 0 || in > kLimit || k <= 0 || k > kLimit || s <= 0 || s > kLimit || d <= 0 ||
        d > kLimit || pads[a] < 0 || pads[a] > kLimit || pads[spatial + a] < 0 ||
        pads[spatial + a] > kLimit) {
      return {};
    }
    const int64_t extent = d * (k - 1) + 1;
    int64_t size = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      size = ceil_div(in, s);
    } else {
      const int64_t padded = in + (auto_pad == "VALID" ? 0 : pads[a] + pads[spatial + a]);
      if (padded < extent) return {};
      size = (padded - extent) / s + 1;
    }
    out.push_back(size);
  }
  return out;
}

// com.microsoft.QGemm, which QDQ fusion writes for a quantized Gemm with a bias: (M, N) from A's
// and B's dims and transA / transB, as Gemm's. Without it ONNX's inference stops at the node and
// every value after it stays open (transformer_decoder_int8's layer normalizations then went
// unfused: their inputs had no rank).
int complete_qgemm(Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (node.inputs.size() < 4 || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return 0;
  const std::vector<int64_t> a = known_dims(graph, node.inputs[0]);
  const std::vector<int64_t> b = known_dims(graph, node.inputs[3]);
  Value& output = graph.value(node.outputs[0]);
  if (a.size() != 2 || b.size() != 2) return 0;
  if (output.dtype == DataType::kUndefined) {
    // The contrib op's output: quantized as y_zero_point (u8 without one) when it has a
    // y_scale, else float.
    const auto input = [&](std::size_t i) {
      return i < node.inputs.size() ? node.inputs[i] : kNoValue;
    };
    output.dtype = input(7) == kNoValue   ? DataType::kFloat
                   : input(8) == kNoValue ? DataType::kUInt8
                                          : graph.value(input(8)).dtype;
  }
  const bool trans_a = node.int_attribute("transA", 0) != 0;
  const bool trans_b = node.int_attribute("transB", 0) != 0;
  if ((trans_a ? a[0] : a[1]) != (trans_b ? b[1] : b[0])) return 0;  // The run reports it.
  output.shape = Shape::of({trans_a ? a[1] : a[0], trans_b ? b[0] : b[1]});
  return 1;
}

// Shapes that follow from the inputs' shapes by a formula, without a kernel: a Conv's and a
// pooling's (a Conv kernel made to ask would pack its weights), and Shape's and Size's of an
// input whose rank alone is known (no kernel takes a stand-in of unknown dims). These are
// what ONNX's inference rounds closed on ssdlite320_mobilenet_v3_large, each round exporting
// the whole graph to a child process. -1: not such a node.
int complete_by_formula(Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (node.domain == "com.microsoft" && node.op_type == "QGemm") return complete_qgemm(graph, id);
  if (!node.domain.empty() || node.inputs.empty() || node.inputs[0] == kNoValue ||
      node.outputs.empty() || node.outputs[0] == kNoValue)
    return -1;
  std::vector<int64_t> dims;
  DataType dtype = graph.value(node.inputs[0]).dtype;
  if (node.op_type == "Shape" || node.op_type == "Size") {
    const Shape& input = graph.value(node.inputs[0]).shape;
    if (!input.rank_known || node.outputs.size() != 1) return 0;
    const auto rank = static_cast<int64_t>(input.rank());
    const auto clamp = [rank](int64_t axis) {
      return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank);
    };
    if (node.op_type == "Shape") {
      const int64_t start = clamp(node.int_attribute("start", 0));
      const int64_t end = clamp(node.int_attribute("end", rank));
      dims = {std::max<int64_t>(0, end - start)};
    }
    dtype = DataType::kInt64;
  } else if (node.op_type == "Conv" || node.op_type == "MaxPool" || node.op_type == "AveragePool") {
    // MaxPool's second output (indices) is left to inference.
    if (node.outputs.size() != 1 || dtype == DataType::kUndefined) return 0;
    dims = windowed_dims(graph, node);
    if (dims.empty()) return 0;
  } else {
    return -1;
  }
  Value& output = graph.value(node.outputs[0]);
  output.shape = Shape::of(dims);
  if (output.dtype == DataType::kUndefined) output.dtype = dtype;
  return 1;
}

}  // namespace

int complete_shapes_by_kernels(Graph& graph) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  int completed = 0;
  for (NodeId id : graph.topological_order()) {
    bool open = false;
    for (ValueId output : graph.node(id).outputs) {
      open = open || (output != kNoValue && !graph.value(output).shape.is_static());
    }
    if (!open) continue;
    const int by_formula = complete_by_formula(graph, id);
    completed += by_formula >= 0 ? by_formula : complete_node(graph, id, engine);
  }
  return completed;
}

}  // namespace cleave
