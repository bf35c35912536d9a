// The PyTorch op table's layers: convolution, pooling, normalisation, products, shapes.
#include <algorithm>
#include <cmath>

#include "codegen/pytorch_call.h"
#include "ir/text.h"

namespace cleave::pytorch_detail {

std::pair<std::vector<int64_t>, std::vector<int64_t>> spatial_pads(
    const Call& c, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
    const std::vector<int64_t>& dilations) {
  const std::size_t r = kernel.size();
  std::vector<int64_t> begin(r, 0), end(r, 0);
  const std::string auto_pad = c.node.string_attribute("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = c.node.ints_attribute("pads");
    if (!pads.empty()) {
      if (pads.size() != 2 * r) c.fail("pads has the wrong length");
      for (std::size_t a = 0; a < r; ++a) begin[a] = pads[a], end[a] = pads[a + r];
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const auto in = c.shape_in(0);
    const auto out = c.shape_out(0);
    for (std::size_t a = 0; a < r; ++a) {
      int64_t total = std::max<int64_t>(
          0, (out[a + 2] - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1 - in[a + 2]);
      int64_t small = total / 2;
      begin[a] = auto_pad == "SAME_UPPER" ? small : total - small;
      end[a] = total - begin[a];
    }
  } else if (auto_pad != "VALID") {
    c.fail(fmt::format("auto_pad '{}'", auto_pad));
  }
  return {begin, end};
}

std::string torch_pad_list(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  std::vector<int64_t> pads;
  for (std::size_t a = begin.size(); a-- > 0;) {
    pads.push_back(begin[a]);
    pads.push_back(end[a]);
  }
  return py_tuple(pads);
}

std::vector<int64_t> or_default(std::vector<int64_t> values, std::size_t size, int64_t fill) {
  if (values.empty()) values.assign(size, fill);
  return values;
}

namespace {

// The fused activation of cleave's passes, applied to expression `y`.
std::string activation(const Call& c, const std::string& y) {
  const std::string kind = c.node.string_attribute("activation", "");
  if (kind.empty()) return y;
  if (kind == "Relu") return fmt::format("F.relu({})", y);
  if (kind == "Swish") return fmt::format("F.silu({})", y);
  if (kind == "Gelu") return fmt::format("F.gelu({})", y);
  if (kind == "HardSwish") return fmt::format("F.hardswish({})", y);
  if (kind == "Clip") {
    return fmt::format("torch.clamp({}, {}, {})", y,
                       py_float(c.node.float_attribute("activation_min", -INFINITY)),
                       py_float(c.node.float_attribute("activation_max", INFINITY)));
  }
  c.fail(fmt::format("fused activation '{}'", kind));
}

std::vector<std::string> conv(const Call& c) {
  const auto weight = c.shape_in(1);
  const std::size_t r = weight.size() - 2;
  if (r < 1 || r > 3) c.fail(fmt::format("{}-D convolution", r));
  std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  const auto strides = or_default(c.node.ints_attribute("strides"), r, 1);
  const auto dilations = or_default(c.node.ints_attribute("dilations"), r, 1);
  auto [begin, end] = spatial_pads(c, kernel, strides, dilations);
  std::vector<std::string> lines;
  std::string x = c.in(0);
  // An 8-bit max pool (QDQ fusion's) runs in float32, which holds every 8-bit value exactly.
  const DataType type = c.graph.value(c.node.outputs[0]).dtype;
  const bool eight_bit = type == DataType::kUInt8 || type == DataType::kInt8;
  if (eight_bit) x += ".to(torch.float32)";
  std::vector<int64_t> padding = begin;
  if (begin != end) {
    lines.push_back(fmt::format("{} = F.pad({}, {})", c.out(), x, torch_pad_list(begin, end)));
    x = c.out();
    padding.assign(r, 0);
  }
  // 2-D through the model file's conv2d (oneDNN always; see its docstring).
  std::string y = fmt::format("{}({}, {}, {}, stride={}, padding={}, dilation={}, groups={})",
                              r == 2 ? "conv2d" : fmt::format("F.conv{}d", r), x, c.in(1),
                              c.has(2) ? c.in(2) : "None", py_tuple(strides), py_tuple(padding),
                              py_tuple(dilations), c.node.int_attribute("group", 1));
  const int64_t sum = c.node.int_attribute("sum_input", -1);
  if (sum >= 0) y = fmt::format("{} + {}", y, c.in(static_cast<std::size_t>(sum)));
  lines.push_back(fmt::format("{} = {}", c.out(), activation(c, y)));
  return lines;
}

std::vector<std::string> pool(const Call& c, bool max) {
  const auto kernel = c.node.ints_attribute("kernel_shape");
  const std::size_t r = kernel.size();
  if (r < 1 || r > 3) c.fail("kernel_shape must have 1 to 3 dims");
  const auto strides = or_default(c.node.ints_attribute("strides"), r, 1);
  const auto dilations = or_default(c.node.ints_attribute("dilations"), r, 1);
  auto [begin, end] = spatial_pads(c, kernel, strides, dilations);
  const bool ceil = c.node.int_attribute("ceil_mode", 0) != 0;
  std::vector<std::string> lines;
  std::string x = c.in(0);
  // An 8-bit max pool (QDQ fusion's) runs in float32, which holds every 8-bit value exactly.
  const DataType type = c.graph.value(c.node.outputs[0]).dtype;
  const bool eight_bit = type == DataType::kUInt8 || type == DataType::kInt8;
  if (eight_bit) x += ".to(torch.float32)";
  std::vector<int64_t> padding = begin;
  const bool count_pad = c.node.int_attribute("count_include_pad", 0) != 0;
  if (begin != end) {
    if (!max && !count_pad) c.fail("asymmetric pads without count_include_pad");
    lines.push_back(fmt::format("{} = F.pad({}, {}, value={})", c.out(), x,
                                torch_pad_list(begin, end), max ? "float('-inf')" : "0.0"));
    x = c.out();
    padding.assign(r, 0);
  }
  if (max) {
    if (c.node.outputs.size() > 1 && c.node.outputs[1] != kNoValue &&
        !c.graph.consumers(c.node.outputs[1]).empty()) {
      c.fail("the indices output");
    }
    lines.push_back(
        fmt::format("{} = F.max_pool{}d({}, {}, stride={}, padding={}, dilation={}, ceil_mode={})",
                    c.out(), r, x, py_tuple(kernel), py_tuple(strides), py_tuple(padding),
                    py_tuple(dilations), ceil ? "True" : "False"));
  } else {
    if (dilations != std::vector<int64_t>(r, 1)) c.fail("dilated average pooling");
    lines.push_back(fmt::format(
        "{} = F.avg_pool{}d({}, {}, stride={}, padding={}, ceil_mode={}, count_include_pad={})",
        c.out(), r, x, py_tuple(kernel), py_tuple(strides), py_tuple(padding),
        ceil ? "True" : "False", count_pad ? "True" : "False"));
  }
  if (eight_bit) {
    lines.push_back(fmt::format("{0} = {0}.to({1})", c.out(),
                                type == DataType::kUInt8 ? "torch.uint8" : "torch.int8"));
  }
  return lines;
}

std::vector<int64_t> spatial_axes(const Call& c) {
  std::vector<int64_t> axes;
  for (std::size_t a = 2; a < c.shape_in(0).size(); ++a) axes.push_back(static_cast<int64_t>(a));
  return axes;
}

std::vector<int64_t> reduce_axes(const Call& c) {
  std::vector<int64_t> axes = c.node.ints_attribute("axes");
  if (axes.empty() && c.has(1)) axes = c.required_ints(1, "axes");
  const auto rank = static_cast<int64_t>(c.shape_in(0).size());
  if (axes.empty()) {
    if (c.node.int_attribute("noop_with_empty_axes", 0) != 0) return {};
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  return axes;
}

std::vector<std::string> reduce(const Call& c, const char* function) {
  const auto axes = reduce_axes(c);
  const bool keep = c.node.int_attribute("keepdims", 1) != 0;
  if (axes.empty()) return {fmt::format("{} = {}", c.out(), c.in(0))};
  return {fmt::format("{} = {}({}, dim={}, keepdim={})", c.out(), function, c.in(0), py_tuple(axes),
                      keep ? "True" : "False")};
}

// torch.prod takes one axis: the product over each, last axis first so the others stay put.
std::vector<std::string> reduce_prod(const Call& c) {
  auto axes = reduce_axes(c);
  const bool keep = c.node.int_attribute("keepdims", 1) != 0;
  std::sort(axes.rbegin(), axes.rend());
  std::string y = c.in(0);
  for (int64_t a : axes)
    y = fmt::format("{}.prod(dim={}, keepdim={})", y, a, keep ? "True" : "False");
  return {fmt::format("{} = {}", c.out(), y)};
}

std::vector<std::string> softmax(const Call& c, const char* function) {
  const auto shape = c.shape_in(0);
  if (opset_at_least(c, 13)) {
    return {fmt::format("{} = {}({}, dim={})", c.out(), function, c.in(0),
                        c.axis("axis", -1, shape.size()))};
  }
  const int64_t axis = c.axis("axis", 1, shape.size());
  int64_t outer = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= shape[a];
  return {fmt::format("{} = {}({}.reshape({}, -1), dim=1).reshape({})", c.out(), function, c.in(0),
                      outer, py_tuple(shape))};
}

// F.layer_norm over the trailing axes; an affine it cannot take is applied after.
std::vector<std::string> layer_norm(const Call& c) {
  const auto shape = c.shape_in(0);
  const int64_t axis = c.axis("axis", -1, shape.size());
  const std::vector<int64_t> normalized(shape.begin() + axis, shape.end());
  const std::string eps = py_float(c.node.float_attribute("epsilon", 1e-5f));
  if (c.shape_in(1) == normalized && (!c.has(2) || c.shape_in(2) == normalized)) {
    return std::vector<std::string>{
        unary_line(c, fmt::format("F.layer_norm({}, {}, {}, {}, {})", c.in(0), py_tuple(normalized),
                                  c.in(1), c.has(2) ? c.in(2) : "None", eps))};
  }
  return std::vector<std::string>{unary_line(
      c, fmt::format("F.layer_norm({}, {}, None, None, {}) * {}{}", c.in(0), py_tuple(normalized),
                     eps, c.in(1), c.has(2) ? " + " + c.in(2) : ""))};
}

std::vector<std::string> gemm(const Call& c) {
  std::string a = c.in(0), b = c.in(1);
  if (c.node.int_attribute("transA", 0)) a += ".t()";
  if (c.node.int_attribute("transB", 0)) b += ".t()";
  std::string y = fmt::format("torch.matmul({}, {})", a, b);
  const float alpha = c.node.float_attribute("alpha", 1.0f);
  const float beta = c.node.float_attribute("beta", 1.0f);
  if (alpha != 1.0f) y = fmt::format("{} * {}", py_float(alpha), y);
  if (c.has(2)) {
    y += beta == 1.0f ? " + " + c.in(2) : fmt::format(" + {} * {}", py_float(beta), c.in(2));
  }
  return std::vector<std::string>{unary_line(c, activation(c, y))};
}

// No perm: the axes reversed.
std::vector<std::string> transpose(const Call& c) {
  std::vector<int64_t> perm = c.node.ints_attribute("perm");
  if (perm.empty()) {
    for (auto a = static_cast<int64_t>(c.shape_in(0).size()); a-- > 0;) perm.push_back(a);
  }
  return std::vector<std::string>{
      unary_line(c, fmt::format("{}.permute({})", c.in(0), py_tuple(perm)))};
}

// Constant indices: select or index_select; others wrap negative indices at run time.
std::vector<std::string> gather(const Call& c) {
  const auto shape = c.shape_in(0);
  const int64_t axis = c.axis("axis", 0, shape.size());
  const auto out = c.shape_out();
  if (auto indices = c.const_ints(1)) {
    for (int64_t& k : *indices) k = k < 0 ? k + shape[axis] : k;
    if (c.input_value(1).shape.rank() == 0) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("{}.select({}, {})", c.in(0), axis, indices->at(0)))};
    }
    return std::vector<std::string>{
        unary_line(c, fmt::format("torch.index_select({}, {}, torch.tensor({})).reshape({})",
                                  c.in(0), axis, py_list(*indices), py_tuple(out)))};
  }
  return std::vector<std::string>{unary_line(
      c, fmt::format("torch.index_select({}, {}, torch.remainder({}, {}).reshape(-1)).reshape({})",
                     c.in(0), axis, c.in(1), shape[axis], py_tuple(out)))};
}

// One bound of Slice input i at position k: the clamped constant, or (for bounds computed at run
// time) the Python int read from the tensor, which Python's slicing clamps as ONNX does.
std::string slice_bound(const Call& c, std::size_t i, std::size_t k, int64_t dim) {
  if (auto values = c.const_ints(i)) {
    int64_t x = values->at(k);
    if (x < 0) x += dim;
    return std::to_string(std::clamp<int64_t>(x, 0, dim));
  }
  return fmt::format("int({}[{}])", c.in(i), k);
}

// Starts and ends as inputs from opset 10, as attributes before; clamped as ONNX does.
std::vector<std::string> slice(const Call& c) {
  const auto shape = c.shape_in(0);
  std::vector<int64_t> axes, steps;
  std::size_t count = 0;
  if (opset_at_least(c, 10)) {
    count = static_cast<std::size_t>(c.elements_in(1));
    if (c.has(3)) axes = c.required_ints(3, "axes");
    if (c.has(4)) steps = c.required_ints(4, "steps");
  } else {
    count = c.node.ints_attribute("starts").size();
    axes = c.node.ints_attribute("axes");
  }
  if (axes.empty()) {
    for (std::size_t a = 0; a < count; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  std::vector<std::string> index(shape.size(), ":");
  for (std::size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + static_cast<int64_t>(shape.size()) : axes[k];
    const int64_t step = k < steps.size() ? steps[k] : 1;
    if (step <= 0) c.fail("a negative step");
    const int64_t dim = shape.at(a);
    std::string begin, end;
    if (opset_at_least(c, 10)) {
      begin = slice_bound(c, 1, k, dim);
      end = slice_bound(c, 2, k, dim);
    } else {
      const auto clamp = [dim](int64_t x) {
        return std::clamp<int64_t>(x < 0 ? x + dim : x, 0, dim);
      };
      begin = std::to_string(clamp(c.node.ints_attribute("starts").at(k)));
      end = std::to_string(clamp(c.node.ints_attribute("ends").at(k)));
    }
    index.at(a) =
        step == 1 ? fmt::format("{}:{}", begin, end) : fmt::format("{}:{}:{}", begin, end, step);
  }
  return std::vector<std::string>{
      unary_line(c, fmt::format("{}[{}]", c.in(0), fmt::join(index, ", ")))};
}

std::vector<std::string> split(const Call& c) {
  const auto shape = c.shape_in(0);
  const int64_t axis = c.axis("axis", 0, shape.size());
  std::vector<int64_t> sizes;
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < c.node.outputs.size(); ++i) {
    sizes.push_back(c.shape_out(i).at(axis));
    outputs.push_back(c.out(i));
  }
  return std::vector<std::string>{fmt::format("{}, = torch.split({}, {}, dim={})",
                                              fmt::join(outputs, ", "), c.in(0), py_list(sizes),
                                              axis)};
}

std::vector<std::string> constant_of_shape(const Call& c) {
  double fill = 0;
  DataType type = DataType::kFloat;
  if (const Attribute* value = c.node.attribute("value")) {
    type = value->t.dtype;
    if (type == DataType::kFloat)
      fill = value->t.as<float>()[0];
    else if (type == DataType::kInt64)
      fill = static_cast<double>(value->t.as<int64_t>()[0]);
    else
      c.fail("a value that is neither float nor int64");
  }
  return std::vector<std::string>{
      unary_line(c, fmt::format("torch.full({}, {}, dtype={})", py_tuple(c.shape_out()),
                                py_float(fill), torch_dtype(type)))};
}

// Constant padding of any axis; reflect and edge only of the spatial axes, as torch pads.
std::vector<std::string> pad(const Call& c) {
  const auto shape = c.shape_in(0);
  std::vector<int64_t> pads =
      opset_at_least(c, 11) ? c.required_ints(1, "pads") : c.node.ints_attribute("pads");
  const std::size_t r = shape.size();
  if (pads.size() != 2 * r) c.fail("pads has the wrong length");
  std::vector<int64_t> begin(pads.begin(), pads.begin() + r), end(pads.begin() + r, pads.end());
  const std::string mode = c.node.string_attribute("mode", "constant");
  std::string value = "0.0";
  if (opset_at_least(c, 11) && c.has(2)) {
    auto scalar = c.const_scalar(2);
    if (!scalar) c.fail("a non-constant pad value");
    value = py_float(*scalar);
  } else if (!opset_at_least(c, 11)) {
    value = py_float(c.node.float_attribute("value", 0));
  }
  if (mode == "constant") {
    return std::vector<std::string>{unary_line(
        c, fmt::format("F.pad({}, {}, value={})", c.in(0), torch_pad_list(begin, end), value))};
  }
  // reflect and replicate pad only the spatial axes in torch.
  for (std::size_t a = 0; a < 2 && a < r; ++a) {
    if (begin[a] != 0 || end[a] != 0) c.fail(fmt::format("{} padding of axis {}", mode, a));
  }
  std::vector<int64_t> b(begin.begin() + 2, begin.end()), e(end.begin() + 2, end.end());
  return std::vector<std::string>{
      unary_line(c, fmt::format("F.pad({}, {}, mode='{}')", c.in(0), torch_pad_list(b, e),
                                mode == "edge" ? "replicate" : mode))};
}

}  // namespace

void add_layer_writers(std::map<std::string, Writer>& t) {
  t["Conv"] = conv;
  t["MaxPool"] = [](const Call& c) { return pool(c, true); };
  t["AveragePool"] = [](const Call& c) { return pool(c, false); };
  t["GlobalAveragePool"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c, fmt::format("{}.mean(dim={}, keepdim=True)", c.in(0), py_tuple(spatial_axes(c))))};
  };
  t["GlobalMaxPool"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c,
        fmt::format("torch.amax({}, dim={}, keepdim=True)", c.in(0), py_tuple(spatial_axes(c))))};
  };
  t["BatchNormalization"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c, activation(c, fmt::format("F.batch_norm({}, {}, {}, {}, {}, False, 0.0, {})", c.in(0),
                                     c.in(3), c.in(4), c.in(1), c.in(2),
                                     py_float(c.node.float_attribute("epsilon", 1e-5f)))))};
  };
  t["InstanceNormalization"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c, fmt::format("F.instance_norm({}, weight={}, bias={}, eps={})", c.in(0), c.in(1), c.in(2),
                       py_float(c.node.float_attribute("epsilon", 1e-5f))))};
  };
  t["LayerNormalization"] = layer_norm;
  t["Gemm"] = gemm;
  t["MatMul"] = [](const Call& c) {
    std::string y = fmt::format("torch.matmul({}, {})", c.in(0), c.in(1));
    if (c.has(2)) y += " + " + c.in(2);
    return std::vector<std::string>{unary_line(c, activation(c, y))};
  };
  t["Softmax"] = [](const Call& c) { return softmax(c, "torch.softmax"); };
  t["LogSoftmax"] = [](const Call& c) { return softmax(c, "torch.log_softmax"); };
  t["Concat"] = [](const Call& c) {
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < c.node.inputs.size(); ++i) parts.push_back(c.in(i));
    return std::vector<std::string>{
        unary_line(c, fmt::format("torch.cat([{}], dim={})", fmt::join(parts, ", "),
                                  c.axis("axis", 0, c.shape_out().size())))};
  };
  // Shapes are static, so every reshaping op is a reshape to its output's shape.
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    t[op] = [](const Call& c) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("{}.reshape({})", c.in(0), py_tuple(c.shape_out())))};
    };
  }
  t["Expand"] = [](const Call& c) {
    return std::vector<std::string>{
        unary_line(c, fmt::format("{}.expand({})", c.in(0), py_tuple(c.shape_out())))};
  };
  t["Tile"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c, fmt::format("{}.repeat({})", c.in(0), py_tuple(c.required_ints(1, "repeats"))))};
  };
  t["Transpose"] = transpose;
  t["Gather"] = gather;
  t["Slice"] = slice;
  t["Split"] = split;
  t["ReduceMean"] = [](const Call& c) { return reduce(c, "torch.mean"); };
  t["ReduceSum"] = [](const Call& c) { return reduce(c, "torch.sum"); };
  t["ReduceMax"] = [](const Call& c) { return reduce(c, "torch.amax"); };
  t["ReduceMin"] = [](const Call& c) { return reduce(c, "torch.amin"); };
  t["ReduceProd"] = reduce_prod;
  t["Cast"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c, fmt::format("{}.to({})", c.in(0),
                       torch_dtype(static_cast<DataType>(c.node.int_attribute("to", 1)))))};
  };
  t["Shape"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(
        c, fmt::format("torch.tensor({}, dtype=torch.int64)",
                       py_list(c.shape_out().empty() ? std::vector<int64_t>{} : c.shape_in(0))))};
  };
  t["ConstantOfShape"] = constant_of_shape;
  t["Pad"] = pad;
  t["Einsum"] = [](const Call& c) {
    return std::vector<std::string>{
        unary_line(c, fmt::format("torch.einsum('{}', {})", c.node.string_attribute("equation", ""),
                                  join_inputs(c, ", ")))};
  };
}

}  // namespace cleave::pytorch_detail
