// Region maps per op family: windows (Conv, pooling), channels, broadcasting, joins, matrices.
#include "spatial/region_rules.h"

#include <algorithm>
#include <set>

#include "spatial/resize_region.h"

namespace cleave {

std::optional<std::vector<int64_t>> static_sizes(const Graph& graph, ValueId value) {
  if (value == kNoValue) return std::nullopt;
  const Value& v = graph.value(value);
  if (v.initializer) return v.initializer->dims;
  if (!v.shape.rank_known || !v.shape.is_static()) return std::nullopt;
  return v.shape.sizes();
}

namespace {

RegionMap refuse(std::string reason) {
  RegionMap r;
  r.reason = std::move(reason);
  return r;
}

int64_t opset(const Graph& graph) {
  auto it = graph.opset_imports.find("");
  return it == graph.opset_imports.end() ? 17 : it->second;
}

bool is_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {"Relu",
                                            "LeakyRelu",
                                            "PRelu",
                                            "Sigmoid",
                                            "Tanh",
                                            "Clip",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Elu",
                                            "Selu",
                                            "Celu",
                                            "Softplus",
                                            "Softsign",
                                            "Exp",
                                            "Log",
                                            "Abs",
                                            "Neg",
                                            "Sqrt",
                                            "Reciprocal",
                                            "Identity",
                                            "Dropout",
                                            "Erf",
                                            "Gelu",
                                            "Mish",
                                            "Cast",
                                            "Floor",
                                            "Ceil",
                                            "Round",
                                            "Sign",
                                            "Not",
                                            "ThresholdedRelu",
                                            "Sin",
                                            "Cos",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Max",
                                            "Min",
                                            "Sum",
                                            "Mean",
                                            "Where",
                                            "Equal",
                                            "Greater",
                                            "Less",
                                            "GreaterOrEqual",
                                            "LessOrEqual",
                                            "And",
                                            "Or",
                                            "Xor",
                                            "Mod",
                                            "IsNaN",
                                            "IsInf",
                                            "Shrink"};
  return ops.count(op) != 0;
}

// Numpy broadcasting: an input dimension of 1 against a larger output reads its one element.
std::optional<Box> broadcast_box(const std::vector<int64_t>& in, const std::vector<int64_t>& os,
                                 const Box& out) {
  if (in.size() > os.size()) return std::nullopt;
  Box box;
  const std::size_t shift = os.size() - in.size();
  for (std::size_t j = 0; j < in.size(); ++j) {
    const std::size_t od = j + shift;
    if (in[j] == os[od]) {
      box.push_back(out[od]);
    } else if (in[j] == 1) {
      box.push_back({0, 1});
    } else {
      return std::nullopt;
    }
  }
  return box;
}

bool full_along(const Box& out, const std::vector<int64_t>& os, std::size_t axis) {
  return out[axis].begin == 0 && out[axis].end == os[axis];
}

// Conv and the windowed pools: the input rows a range of output rows reads (Eqs. 3.2-3.5),
// with the pads each slice keeps: only a slice at a true border pads.
RegionMap windowed(const Graph& graph, const Node& n, const Box& out, bool conv) {
  auto xs = static_sizes(graph, n.inputs[0]);
  auto os = static_sizes(graph, n.outputs[0]);
  if (!xs || xs->size() != 4) return refuse("only 2-D windows on NCHW tensors are split");
  const std::string auto_pad = n.string_attribute("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    return refuse("auto_pad " + auto_pad + " is not split (explicit pads are)");
  std::vector<int64_t> kernel = n.ints_attribute("kernel_shape");
  std::optional<std::vector<int64_t>> ws;
  if (conv) {
    ws = static_sizes(graph, n.inputs.at(1));
    if (!ws || ws->size() != 4) return refuse("weights of unknown shape");
    if (kernel.empty()) kernel = {(*ws)[2], (*ws)[3]};
  }
  if (kernel.size() != 2) return refuse("kernel_shape is not 2-D");
  std::vector<int64_t> strides = n.ints_attribute("strides");
  std::vector<int64_t> dilations = n.ints_attribute("dilations");
  std::vector<int64_t> pads = n.ints_attribute("pads");
  if (strides.empty()) strides = {1, 1};
  if (dilations.empty()) dilations = {1, 1};
  if (pads.empty() || auto_pad == "VALID") pads = {0, 0, 0, 0};
  const bool spatial_full = full_along(out, *os, 2) && full_along(out, *os, 3);
  // A slice gets the pads that make its windows exactly the whole op's, so ceil_mode changes
  // nothing in it, except the average's divisor: with count_include_pad, the rows ceil_mode
  // adds past the end pad are not counted, and the slice's explicit pad would count them.
  if (n.op_type == "AveragePool" && n.int_attribute("ceil_mode", 0) != 0 &&
      n.int_attribute("count_include_pad", 0) != 0 && !spatial_full)
    return refuse("ceil_mode average pooling that counts pads is not split along H or W");
  if (n.outputs.size() > 1) return refuse("MaxPool with indices is not split");

  RegionMap r;
  r.ok = true;
  Box x(4);
  x[0] = out[0];
  x[1] = out[1];
  if (conv) {
    const int64_t groups = n.int_attribute("group", 1);
    const int64_t co = (*os)[1];
    const int64_t cin = (*xs)[1];
    x[1] = {0, cin};
    if (groups > 1 && !full_along(out, *os, 1)) {
      const int64_t per_group = co / groups;
      if (out[1].begin % per_group || out[1].end % per_group)
        return refuse("channel range " + std::to_string(out[1].begin) + ":" +
                      std::to_string(out[1].end) + " splits a group of " +
                      std::to_string(per_group));
      const int64_t g0 = out[1].begin / per_group, g1 = out[1].end / per_group;
      x[1] = {g0 * (cin / groups), g1 * (cin / groups)};
      r.attributes.push_back({"group", Attribute::of_int(g1 - g0)});
    }
  }
  std::vector<int64_t> new_pads(4);
  for (int d = 0; d < 2; ++d) {
    const int axis = 2 + d;
    const int64_t k_eff = (kernel[d] - 1) * dilations[d] + 1;  // Eq. 3.2
    const int64_t start = out[axis].begin * strides[d] - pads[d];
    const int64_t stop = (out[axis].end - 1) * strides[d] - pads[d] + k_eff;  // Eq. 3.3
    const int64_t lo = std::max<int64_t>(0, start), hi = std::min((*xs)[axis], stop);
    if (lo >= hi) return refuse("the slice's window lies wholly in the padding");
    x[axis] = {lo, hi};
    new_pads[d] = lo - start;
    new_pads[d + 2] = stop - hi;
  }
  r.inputs.assign(n.inputs.size(), std::nullopt);
  r.inputs[0] = x;
  if (conv) {
    r.inputs[1] = Box{out[1], {0, (*ws)[1]}, {0, (*ws)[2]}, {0, (*ws)[3]}};
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) r.inputs[2] = Box{out[1]};
    // The optimizer's residual sum (passes/conv_activation_fusion.h): an input of the output's
    // shape added to it, so the slice reads the box it computes.
    const int64_t sum = n.int_attribute("sum_input", -1);
    if (sum >= 0 && static_cast<std::size_t>(sum) < n.inputs.size()) r.inputs[sum] = out;
  }
  r.attributes.push_back({"pads", Attribute::of_ints(new_pads)});
  if (auto_pad == "VALID") r.attributes.push_back({"auto_pad", Attribute::of_string("NOTSET")});
  return r;
}

RegionMap elementwise(const Graph& graph, const Node& n, const std::vector<int64_t>& os,
                      const Box& out) {
  RegionMap r;
  r.ok = true;
  for (ValueId in : n.inputs) {
    if (in == kNoValue) {
      r.inputs.push_back(std::nullopt);
      continue;
    }
    auto s = static_sizes(graph, in);
    if (!s) return refuse("an input of unknown shape");
    auto box = broadcast_box(*s, os, out);
    if (!box) return refuse("inputs do not broadcast to the output");
    r.inputs.push_back(box);
  }
  return r;
}

RegionMap concat(const Graph& graph, const Node& n, const std::vector<int64_t>& os,
                 const Box& out) {
  int64_t axis = n.int_attribute("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(os.size());
  RegionMap r;
  r.ok = true;
  int64_t offset = 0;
  for (ValueId in : n.inputs) {
    auto s = static_sizes(graph, in);
    if (!s || s->size() != os.size()) return refuse("an input of unknown shape");
    const Interval part{offset, offset + (*s)[axis]};
    offset = part.end;
    const Interval hit = intersect(part, out[axis]);
    if (hit.empty()) {
      r.inputs.push_back(std::nullopt);
      continue;
    }
    Box box = out;
    box[axis] = {hit.begin - part.begin, hit.end - part.begin};
    r.inputs.push_back(box);
  }
  return r;
}

RegionMap softmax(const Graph& graph, const Node& n, const std::vector<int64_t>& os,
                  const Box& out) {
  const int64_t rank = static_cast<int64_t>(os.size());
  const bool old = opset(graph) < 13;
  int64_t axis = n.int_attribute("axis", old ? 1 : -1);
  if (axis < 0) axis += rank;
  for (int64_t d = axis; d < (old ? rank : axis + 1); ++d)
    if (!full_along(out, os, d))
      return refuse(n.op_type + " is never split along its own axis " + std::to_string(d));
  RegionMap r;
  r.ok = true;
  r.inputs = {out};
  return r;
}

RegionMap gemm(const Graph& graph, const Node& n, const std::vector<int64_t>& os, const Box& out) {
  auto a = static_sizes(graph, n.inputs[0]);
  auto b = static_sizes(graph, n.inputs[1]);
  if (!a || !b || a->size() != 2 || b->size() != 2 || os.size() != 2)
    return refuse("Gemm operands of unknown shape");
  const bool ta = n.int_attribute("transA", 0), tb = n.int_attribute("transB", 0);
  RegionMap r;
  r.ok = true;
  r.inputs.push_back(ta ? Box{{0, (*a)[0]}, out[0]} : Box{out[0], {0, (*a)[1]}});
  r.inputs.push_back(tb ? Box{out[1], {0, (*b)[1]}} : Box{{0, (*b)[0]}, out[1]});
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    auto c = static_sizes(graph, n.inputs[2]);
    auto box = c ? broadcast_box(*c, os, out) : std::nullopt;
    if (!box) return refuse("Gemm bias does not broadcast");
    r.inputs.push_back(box);
  }
  return r;
}

RegionMap matmul(const Graph& graph, const Node& n, const std::vector<int64_t>& os,
                 const Box& out) {
  auto a = static_sizes(graph, n.inputs[0]);
  auto b = static_sizes(graph, n.inputs[1]);
  if (!a || !b || b->size() != 2 || a->size() != os.size() || a->size() < 2)
    return refuse("only MatMul by a 2-D matrix is split");
  RegionMap r;
  r.ok = true;
  Box abox = out;
  abox.back() = {0, a->back()};
  r.inputs.push_back(abox);
  r.inputs.push_back(Box{{0, (*b)[0]}, out.back()});
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    // The epilogue fusion's bias (matmul_epilogue_fusion.cc): one value per output column.
    auto c = static_sizes(graph, n.inputs[2]);
    if (!c || c->size() != 1 || c->front() != os.back())
      return refuse("a MatMul bias that is not one value per output column");
    r.inputs.push_back(Box{out.back()});
  }
  return r;
}

// Flatten or Reshape of [N,C,1,1] to [N,C]: the channel split carries over to the features.
RegionMap flatten(const Graph& graph, const Node& n, const std::vector<int64_t>& os,
                  const Box& out) {
  auto xs = static_sizes(graph, n.inputs[0]);
  if (!xs || xs->size() != 4 || (*xs)[2] != 1 || (*xs)[3] != 1 || os.size() != 2 ||
      os[0] != (*xs)[0] || os[1] != (*xs)[1])
    return refuse(n.op_type + " is split only from [N,C,1,1] to [N,C]");
  if (n.op_type == "Flatten" && n.int_attribute("axis", 1) != 1)
    return refuse("Flatten is split only with axis 1");
  RegionMap r;
  r.ok = true;
  r.inputs.push_back(Box{out[0], out[1], {0, 1}, {0, 1}});
  if (n.op_type == "Reshape") {
    r.inputs.push_back(std::nullopt);
    r.constant_inputs[1] =
        TensorData::from<int64_t>(DataType::kInt64, {2}, {out[0].size(), out[1].size()});
  }
  return r;
}

RegionMap pad(const Graph& graph, const Node& n, const std::vector<int64_t>& os, const Box& out) {
  auto xs = static_sizes(graph, n.inputs[0]);
  if (!xs || n.string_attribute("mode", "constant") != "constant")
    return refuse("only constant-mode Pad is split");
  std::vector<int64_t> pads;
  const bool as_input = opset(graph) >= 11;
  if (as_input) {
    if (n.inputs.size() < 2 || n.inputs[1] == kNoValue) return refuse("Pad without pads");
    const Value& p = graph.value(n.inputs[1]);
    if (!p.initializer || p.initializer->dtype != DataType::kInt64)
      return refuse("Pad's pads are not a constant");
    auto span = p.initializer->as<int64_t>();
    pads.assign(span.begin(), span.end());
    if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) return refuse("Pad with axes");
  } else {
    pads = n.ints_attribute("pads");
  }
  const std::size_t rank = os.size();
  if (pads.size() != 2 * rank) return refuse("Pad's pads do not match the rank");
  RegionMap r;
  r.ok = true;
  Box x(rank);
  std::vector<int64_t> new_pads(2 * rank);
  for (std::size_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[d + rank] < 0) return refuse("negative pads are not split");
    const int64_t start = out[d].begin - pads[d], stop = out[d].end - pads[d];
    const int64_t lo = std::max<int64_t>(0, start), hi = std::min((*xs)[d], stop);
    if (lo >= hi) return refuse("the slice lies wholly in the padding");
    x[d] = {lo, hi};
    new_pads[d] = lo - start;
    new_pads[d + rank] = stop - hi;
  }
  r.inputs.assign(n.inputs.size(), std::nullopt);
  r.inputs[0] = x;
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) r.inputs[2] = Box{};
  if (as_input) {
    r.constant_inputs[1] =
        TensorData::from<int64_t>(DataType::kInt64, {static_cast<int64_t>(2 * rank)}, new_pads);
  } else {
    r.attributes.push_back({"pads", Attribute::of_ints(new_pads)});
  }
  return r;
}

}  // namespace

RegionMap whole_region(const Graph& graph, NodeId id) {
  RegionMap r;
  r.ok = true;
  for (ValueId in : graph.node(id).inputs) {
    auto s = static_sizes(graph, in);
    r.inputs.push_back(in == kNoValue ? std::nullopt
                                      : std::optional<Box>(s ? full_box(*s) : Box{}));
  }
  return r;
}

RegionMap map_region(const Graph& graph, NodeId id, const Box& out) {
  const Node& n = graph.node(id);
  auto os = static_sizes(graph, n.outputs.at(0));
  if (os && box_contains(out, full_box(*os))) return whole_region(graph, id);
  if (!os) return refuse("output shape not known");
  if (n.outputs.size() != 1 && n.op_type != "Dropout" && n.op_type != "MaxPool")
    return refuse(n.op_type + " has several outputs");
  if (!n.domain.empty()) return refuse("op of domain " + n.domain + " is not split");
  const std::string& op = n.op_type;
  if (op == "Conv") return windowed(graph, n, out, true);
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool")
    return windowed(graph, n, out, false);
  if (op == "Dropout" && n.outputs.size() > 1) return refuse("Dropout with a mask output");
  if (is_elementwise(op)) return elementwise(graph, n, *os, out);
  if (op == "Concat") return concat(graph, n, *os, out);
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") return softmax(graph, n, *os, out);
  if (op == "Gemm") return gemm(graph, n, *os, out);
  if (op == "MatMul") return matmul(graph, n, *os, out);
  if (op == "Flatten" || op == "Reshape") return flatten(graph, n, *os, out);
  if (op == "Pad") return pad(graph, n, *os, out);
  if (os->size() == 4 &&
      (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool")) {
    RegionMap r;
    r.ok = true;
    auto xs = static_sizes(graph, n.inputs[0]);
    r.inputs.push_back(Box{out[0], out[1], {0, (*xs)[2]}, {0, (*xs)[3]}});
    return r;
  }
  if (op == "BatchNormalization" || op == "InstanceNormalization" || op == "LRN") {
    if (os->size() != 4) return refuse(op + " on a tensor that is not NCHW");
    if (op == "LRN" && !full_along(out, *os, 1)) return refuse("LRN is not split along C");
    if (op == "InstanceNormalization" && !(full_along(out, *os, 2) && full_along(out, *os, 3)))
      return refuse("InstanceNormalization needs whole planes");
    RegionMap r;
    r.ok = true;
    r.inputs.push_back(out);
    for (std::size_t i = 1; i < n.inputs.size(); ++i)
      r.inputs.push_back(n.inputs[i] == kNoValue ? std::nullopt : std::optional<Box>(Box{out[1]}));
    return r;
  }
  if ((op == "Resize" || op == "Upsample") && os->size() == 4) {
    if (!(full_along(out, *os, 2) && full_along(out, *os, 3)))
      return resize_region(graph, n, *os, out);
    if (op == "Resize" && n.inputs.size() > 3 && n.inputs[3] != kNoValue)
      return resize_region(graph, n, *os, out);  // its sizes become the slice's
    auto xs = static_sizes(graph, n.inputs[0]);
    RegionMap r;
    r.ok = true;
    r.inputs.push_back(Box{out[0], out[1], {0, (*xs)[2]}, {0, (*xs)[3]}});
    for (std::size_t i = 1; i < n.inputs.size(); ++i) {
      auto s = static_sizes(graph, n.inputs[i]);
      r.inputs.push_back(n.inputs[i] == kNoValue || !s ? std::nullopt
                                                       : std::optional<Box>(full_box(*s)));
    }
    return r;
  }
  return refuse(op + " is computed whole (no split rule)");
}

int64_t split_granularity(const Graph& graph, NodeId id, int axis) {
  const Node& n = graph.node(id);
  if (n.op_type != "Conv" || axis != 1) return 1;
  const int64_t groups = n.int_attribute("group", 1);
  auto os = static_sizes(graph, n.outputs[0]);
  if (groups <= 1 || !os || os->size() != 4) return 1;
  return std::max<int64_t>(1, (*os)[1] / groups);
}

double flops_per_output_element(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  if (n.op_type == "Conv") {
    auto ws = static_sizes(graph, n.inputs.at(1));
    if (ws && ws->size() == 4) return 2.0 * (*ws)[1] * (*ws)[2] * (*ws)[3];
  }
  if (n.op_type == "MaxPool" || n.op_type == "AveragePool") {
    auto k = n.ints_attribute("kernel_shape");
    double f = 1;
    for (int64_t v : k) f *= static_cast<double>(v);
    return f;
  }
  if (n.op_type == "Gemm" || n.op_type == "MatMul") {
    auto a = static_sizes(graph, n.inputs[0]);
    if (a && !a->empty())
      return 2.0 * static_cast<double>(n.int_attribute("transA", 0) ? a->front() : a->back());
  }
  if (n.op_type.rfind("Global", 0) == 0) {
    auto xs = static_sizes(graph, n.inputs[0]);
    if (xs && xs->size() == 4) return static_cast<double>((*xs)[2] * (*xs)[3]);
  }
  return 1;
}

}  // namespace cleave
