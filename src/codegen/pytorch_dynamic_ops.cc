// The PyTorch op table's data-dependent ops (TopK, NonZero, NMS, ...) and run-time shape forms.
#include <algorithm>
#include <set>

#include "codegen/pytorch_call.h"

namespace cleave::pytorch_detail {

namespace {

// Scalar input i as a Python expression: its literal when constant, else read at run time.
std::string scalar_input(const Call& c, std::size_t i, bool integer) {
  if (auto value = c.const_scalar(i)) {
    return integer ? std::to_string(static_cast<int64_t>(*value)) : py_float(*value);
  }
  return fmt::format("{}({})", integer ? "int" : "float", c.in(i));
}

// A stable sort then the first k: ONNX keeps the lower index first among equal values, which
// torch.topk does not promise.
std::vector<std::string> top_k(const Call& c) {
  const int64_t axis = c.node.int_attribute("axis", -1);
  const bool largest = c.node.int_attribute("largest", 1) != 0;
  std::string k = opset_at_least(c, 10) ? scalar_input(c, 1, true)
                                        : std::to_string(c.node.int_attribute("k", 1));
  return {fmt::format(
      "{}, {} = [t.narrow({}, 0, {}) for t in torch.sort({}, dim={}, descending={}, stable=True)]",
      c.out(0), c.out(1), axis, k, c.in(0), axis, largest ? "True" : "False")};
}

// The leading batch_dims axes of data and indices are flattened into one, whose position pairs
// with each index tuple's (arange along the flattened batch, then the tuple's coordinates).
std::vector<std::string> gather_nd(const Call& c) {
  const int64_t b = c.node.int_attribute("batch_dims", 0);
  const std::string data = c.in(0), index = c.in(1);
  if (b < 0) c.fail(fmt::format("batch_dims {} (at least 0)", b));
  if (b == 0) {
    return {unary_line(c, fmt::format("{0}[tuple({1}.reshape(-1, {1}.shape[-1]).t())].reshape("
                                      "tuple({1}.shape[:-1]) + tuple({0}.shape[{1}.shape[-1]:]))",
                                      data, index))};
  }
  return {
      fmt::format("_d = {0}.reshape((-1,) + tuple({0}.shape[{1}:]))", data, b),
      fmt::format("_k = {0}.reshape(_d.shape[0], -1, {0}.shape[-1])", index),
      "_n = torch.arange(_d.shape[0])[:, None].expand(-1, _k.shape[1])",
      unary_line(c, fmt::format("_d[(_n,) + tuple(_k.unbind(-1))].reshape(tuple({1}.shape[:-1]) "
                                "+ tuple({0}.shape[{2} + {1}.shape[-1]:]))",
                                data, index, b))};
}

std::vector<std::string> scatter_elements(const Call& c) {
  const int64_t axis = c.node.int_attribute("axis", 0);
  const std::string reduction = c.node.string_attribute("reduction", "none");
  // Negative indices count from the end; torch's % takes the divisor's sign.
  const std::string index = fmt::format("{} % {}.shape[{}]", c.in(1), c.in(0), axis);
  if (reduction == "none") {
    return {unary_line(c, fmt::format("{}.scatter({}, {}, {})", c.in(0), axis, index, c.in(2)))};
  }
  static const std::map<std::string, std::string> kReduce = {
      {"add", "sum"}, {"mul", "prod"}, {"max", "amax"}, {"min", "amin"}};
  auto it = kReduce.find(reduction);
  if (it == kReduce.end()) c.fail(fmt::format("reduction '{}'", reduction));
  return {unary_line(c, fmt::format("{}.scatter_reduce({}, {}, {}, '{}')", c.in(0), axis, index,
                                    c.in(2), it->second))};
}

std::vector<std::string> range(const Call& c) {
  const DataType type = c.graph.value(c.node.outputs.at(0)).dtype;
  const bool integer = type != DataType::kFloat && type != DataType::kDouble;
  return {unary_line(
      c, fmt::format("torch.arange({}, {}, {}, dtype={})", scalar_input(c, 0, integer),
                     scalar_input(c, 1, integer), scalar_input(c, 2, integer), torch_dtype(type)))};
}

// ONNX's greedy suppression, per batch and class: scores high to low (ties: lower box first),
// a box kept unless it overlaps a kept one by more than the threshold; a box of no area
// suppresses nothing, as in ONNX Runtime.
std::vector<std::string> non_max_suppression(const Call& c) {
  const std::string boxes = c.in(0), scores = c.in(1);
  const std::string most = c.has(2) ? scalar_input(c, 2, true) : "0";
  const std::string iou = c.has(3) ? scalar_input(c, 3, false) : "0.0";
  std::vector<std::string> lines = {"_selected = []",
                                    fmt::format("for _b in range({}.shape[0]):", boxes),
                                    fmt::format("    _box = {}[_b]", boxes)};
  if (c.node.int_attribute("center_point_box", 0) != 0) {
    lines.push_back("    _x1, _y1 = _box[:, 0] - _box[:, 2] / 2, _box[:, 1] - _box[:, 3] / 2");
    lines.push_back("    _x2, _y2 = _box[:, 0] + _box[:, 2] / 2, _box[:, 1] + _box[:, 3] / 2");
  } else {
    lines.push_back(
        "    _x1, _y1 = torch.minimum(_box[:, 1], _box[:, 3]), torch.minimum(_box[:, 0], _box[:, "
        "2])");
    lines.push_back(
        "    _x2, _y2 = torch.maximum(_box[:, 1], _box[:, 3]), torch.maximum(_box[:, 0], _box[:, "
        "2])");
  }
  lines.insert(
      lines.end(),
      {"    _area = (_x2 - _x1) * (_y2 - _y1)",
       "    _w = torch.minimum(_x2[:, None], _x2[None]) - torch.maximum(_x1[:, None], _x1[None])",
       "    _h = torch.minimum(_y2[:, None], _y2[None]) - torch.maximum(_y1[:, None], _y1[None])",
       "    _union = _area[:, None] + _area[None] - _w * _h",
       "    _overlaps = (_area[:, None] > 0) & (_area[None] > 0) & (_w > 0) & (_h > 0) & "
       "(_union > 0)",
       fmt::format("    _overlaps &= _w * _h / _union > {}", iou),
       fmt::format("    for _c in range({}.shape[1]):", scores),
       fmt::format("        _s = {}[_b, _c]", scores),
       "        _order = torch.sort(_s, descending=True, stable=True).indices"});
  if (c.has(4)) {
    lines.push_back(
        fmt::format("        _order = _order[_s[_order] > {}]", scalar_input(c, 4, false)));
  }
  lines.insert(
      lines.end(),
      {"        _kept = []",
       "        for _i in _order.tolist():", fmt::format("            if len(_kept) >= {}:", most),
       "                break", "            if not (_kept and bool(_overlaps[_i, _kept].any())):",
       "                _kept.append(_i)", "        _selected += [[_b, _c, _i] for _i in _kept]",
       fmt::format("{} = torch.tensor(_selected, dtype=torch.int64).reshape(-1, 3)", c.out())});
  return lines;
}

// ONNX Runtime's (and cleave's) max mode, in float64 as cleave's kernel: per bin, the largest
// of every sample's four weighted corners; a sample outside [-1, size] counts as 0.
std::vector<std::string> roi_align_max(const Call& c, bool half_pixel) {
  const int64_t out_h = c.node.int_attribute("output_height", 1),
                out_w = c.node.int_attribute("output_width", 1),
                ratio = c.node.int_attribute("sampling_ratio", 0);
  const std::string scale = py_float(c.node.float_attribute("spatial_scale", 1.0f));
  const std::string offset = half_pixel ? "0.5" : "0.0";
  const auto grid = [&](const char* bin) {
    return ratio > 0 ? std::to_string(ratio) : fmt::format("math.ceil({})", bin);
  };
  const auto samples = [&](const char* start, const char* bin, const char* count, int64_t bins) {
    return fmt::format(
        "    {0}s = ({0} + torch.arange({1}, dtype=torch.float64)[:, None] * {2} + "
        "(torch.arange({3}, dtype=torch.float64)[None] + 0.5) * {2} / {3}).reshape(-1)",
        start, bins, bin, count);
  };
  std::vector<std::string> lines = {
      "import math",
      "def _roi_axis(_v, _size):",
      "    _inside = (_v >= -1) & (_v <= _size)",
      "    _v = _v.clamp(min=0)",
      "    _lo = _v.floor().long()",
      "    _edge = _lo >= _size - 1",
      "    _lo = torch.where(_edge, torch.full_like(_lo, _size - 1), _lo)",
      "    _l = torch.where(_edge, torch.zeros_like(_v), _v - _lo)",
      "    return _inside, _lo, torch.where(_edge, _lo, _lo + 1), _l, 1 - _l",
      fmt::format("_rx, _rr = {}.double(), {}.double() * {}", c.in(0), c.in(1), scale),
      "_parts = []",
      "for _r in range(_rr.shape[0]):",
      fmt::format("    _sx, _sy = float(_rr[_r, 0]) - {0}, float(_rr[_r, 1]) - {0}", offset),
      fmt::format("    _bw, _bh = float(_rr[_r, 2]) - {0} - _sx, float(_rr[_r, 3]) - {0} - _sy",
                  offset)};
  // output_half_pixel keeps the legacy boxes of at least one pixel.
  if (!half_pixel) lines.push_back("    _bw, _bh = max(_bw, 1.0), max(_bh, 1.0)");
  lines.insert(
      lines.end(),
      {fmt::format("    _bw, _bh = _bw / {}, _bh / {}", out_w, out_h),
       fmt::format("    _gh, _gw = {}, {}", grid("_bh"), grid("_bw")),
       samples("_sy", "_bh", "_gh", out_h), samples("_sx", "_bw", "_gw", out_w),
       fmt::format("    _plane = _rx[int({}[_r])]", c.in(2)), "    if _gh <= 0 or _gw <= 0:",
       fmt::format("        _parts.append(_rx.new_zeros(_rx.shape[1], {}, {}))", out_h, out_w),
       "        continue", "    _iy, _y0, _y1, _ly, _hy = _roi_axis(_sys, _rx.shape[2])",
       "    _ix, _x0, _x1, _lx, _hx = _roi_axis(_sxs, _rx.shape[3])",
       "    _m = torch.stack([_hy[:, None] * _hx[None] * _plane[:, _y0][:, :, _x0], "
       "_hy[:, None] * _lx[None] * _plane[:, _y0][:, :, _x1], _ly[:, None] * _hx[None] * "
       "_plane[:, _y1][:, :, _x0], _ly[:, None] * _lx[None] * _plane[:, _y1][:, :, _x1]]).amax(0)",
       "    _m = torch.where(_iy[:, None] & _ix[None], _m, torch.zeros_like(_m))",
       fmt::format("    _parts.append(_m.reshape(_m.shape[0], {}, _gh, {}, _gw).amax((2, 4)))",
                   out_h, out_w),
       unary_line(c, fmt::format("(torch.stack(_parts) if _parts else _rx.new_zeros(0, "
                                 "_rx.shape[1], {}, {})).to({}.dtype)",
                                 out_h, out_w, c.in(0)))});
  return lines;
}

// torchvision's roi_align is ONNX's average mode: aligned=True is half_pixel.
std::vector<std::string> roi_align(const Call& c) {
  const std::string mode = c.node.string_attribute("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail(fmt::format("mode '{}' (avg or max)", mode));
  const std::string transform = c.node.string_attribute(
      "coordinate_transformation_mode", opset_at_least(c, 16) ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    c.fail(fmt::format("coordinate_transformation_mode '{}'", transform));
  if (mode == "max") return roi_align_max(c, transform == "half_pixel");
  return {
      "from torchvision.ops import roi_align as _roi_align",
      unary_line(c, fmt::format("_roi_align({0}, torch.cat([{1}.to({0}.dtype)[:, None], {2}], 1), "
                                "output_size=({3}, {4}), spatial_scale={5}, sampling_ratio={6}, "
                                "aligned={7})",
                                c.in(0), c.in(2), c.in(1), c.node.int_attribute("output_height", 1),
                                c.node.int_attribute("output_width", 1),
                                py_float(c.node.float_attribute("spatial_scale", 1.0f)),
                                c.node.int_attribute("sampling_ratio", 0),
                                transform == "half_pixel" ? "True" : "False"))};
}

std::vector<std::string> grid_sample(const Call& c) {
  std::string mode = c.node.string_attribute("mode", "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    c.fail(fmt::format("mode '{}'", mode));
  const std::string padding = c.node.string_attribute("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    c.fail(fmt::format("padding_mode '{}'", padding));
  return {
      unary_line(c, fmt::format("F.grid_sample({}, {}, mode='{}', padding_mode='{}', "
                                "align_corners={})",
                                c.in(0), c.in(1), mode, padding,
                                c.node.int_attribute("align_corners", 0) != 0 ? "True" : "False"))};
}

// Whether the shape of `value` follows the data rather than the model: unknown (inside a
// branch), made by an op whose output length is data (NonZero, NMS, If), shaped by a computed
// input, or computed from such a value. The graph's static shapes of these values come from
// one preparing run and must not be spelled out.
bool shaped_by_data(const Graph& graph, ValueId value, std::map<ValueId, bool>& known) {
  static const std::set<std::string> kDataLength = {
      "NonZero", "NonMaxSuppression", "If", "Loop", "Scan", "Unique", "Compress"};
  static const std::set<std::string> kShapedByInput = {
      "TopK",   "Range",    "Slice", "Reshape", "Expand", "ConstantOfShape", "Tile",
      "Resize", "Upsample", "Pad",   "OneHot",  "Split",  "Squeeze",         "Unsqueeze"};
  if (auto it = known.find(value); it != known.end()) return it->second;
  const Value& v = graph.value(value);
  bool result = !v.shape.is_static();
  known[value] = result;  // Cycles cannot occur; this only stops a revisit.
  if (!result && v.producer >= 0) {
    const Node& node = graph.node(v.producer);
    const bool standard = node.domain.empty() || node.domain == "ai.onnx";
    result = standard && kDataLength.count(node.op_type) > 0;
    for (std::size_t i = 0; i < node.inputs.size() && !result; ++i) {
      const ValueId input = node.inputs[i];
      if (input == kNoValue) continue;
      result = shaped_by_data(graph, input, known) ||
               (i > 0 && standard && kShapedByInput.count(node.op_type) > 0 &&
                !graph.value(input).initializer);
    }
  }
  known[value] = result;
  return result;
}

bool node_shaped_by_data(const Call& c) {
  std::map<ValueId, bool> known;
  for (ValueId id : c.node.inputs) {
    if (id != kNoValue && shaped_by_data(c.graph, id, known)) return true;
  }
  for (ValueId id : c.node.outputs) {
    if (id != kNoValue && shaped_by_data(c.graph, id, known)) return true;
  }
  return false;
}

// Axis a of input 0 (of its rank plus `added` for Unsqueeze) made non-negative; the rank is known
// outside branches even where the sizes follow the data.
int64_t known_axis(const Call& c, int64_t a, std::size_t added = 0) {
  if (a >= 0) return a;
  const Shape& shape = c.input_value(0).shape;
  if (!shape.rank_known) c.fail("a negative axis of a value of unknown rank");
  return a + static_cast<int64_t>(shape.rank() + added);
}

// The shape ops in forms that read shapes at run time, for values shaped by the data.
std::vector<std::string> generic_shape_op(const Call& c) {
  const std::string& op = c.node.op_type;
  const std::string x = c.in(0);
  if (op == "Reshape") {
    if (c.node.int_attribute("allowzero", 0) != 0) c.fail("allowzero with a shape set by data");
    // ONNX's 0 copies the input's dimension.
    return {unary_line(c, fmt::format("{0}.reshape([{0}.shape[i] if d == 0 else d for i, d in "
                                      "enumerate({1}.tolist())])",
                                      x, c.in(1)))};
  }
  if (op == "Flatten") {
    const int64_t axis = known_axis(c, c.node.int_attribute("axis", 1));
    return {unary_line(c, fmt::format("{0}.reshape(int(torch.tensor({0}.shape[:{1}]).prod()), "
                                      "int(torch.tensor({0}.shape[{1}:]).prod()))",
                                      x, axis))};
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    const bool squeeze = op == "Squeeze";
    std::vector<int64_t> axes = c.node.ints_attribute("axes");
    if (axes.empty() && c.has(1)) {
      if (!c.const_ints(1)) {
        // Axes computed in the code (a branch's Constant node): applied one by one, each
        // taken modulo the rank it refers to.
        const std::string rank = squeeze ? fmt::format("{}.dim()", x)
                                         : fmt::format("({}.dim() + {}.numel())", x, c.in(1));
        return {fmt::format("{} = {}", c.out(), x),
                fmt::format("for _a in sorted((a % {} for a in {}.tolist()), reverse={}):", rank,
                            c.in(1), squeeze ? "True" : "False"),
                fmt::format("    {0} = {0}.{1}(_a)", c.out(), squeeze ? "squeeze" : "unsqueeze")};
      }
      axes = *c.const_ints(1);
    }
    if (axes.empty() && squeeze) return {unary_line(c, fmt::format("{}.squeeze()", x))};
    for (int64_t& a : axes) a = known_axis(c, a, squeeze ? 0 : axes.size());
    // Squeeze from the last axis, Unsqueeze from the first, so each axis means the ONNX one.
    std::sort(axes.begin(), axes.end());
    if (op == "Squeeze") std::reverse(axes.begin(), axes.end());
    std::string y = x;
    for (int64_t a : axes)
      y = fmt::format("{}.{}({})", y, op == "Squeeze" ? "squeeze" : "unsqueeze", a);
    return {unary_line(c, y)};
  }
  if (op == "Expand") {
    return {unary_line(c, fmt::format("{0}.expand(torch.broadcast_shapes({0}.shape, "
                                      "tuple({1}.tolist())))",
                                      x, c.in(1)))};
  }
  if (op == "Shape") {
    if (c.node.attribute("start") || c.node.attribute("end")) c.fail("start or end");
    return {unary_line(c, fmt::format("torch.tensor({}.shape, dtype=torch.int64)", x))};
  }
  if (op == "ConstantOfShape") {
    std::string fill = "0.0", type = "torch.float32";
    if (const Attribute* value = c.node.attribute("value")) {
      type = torch_dtype(value->t.dtype);
      if (value->t.dtype == DataType::kFloat) {
        fill = py_float(value->t.as<float>()[0]);
      } else if (value->t.dtype == DataType::kInt64) {
        fill = std::to_string(value->t.as<int64_t>()[0]);
      } else {
        c.fail("a value that is neither float nor int64");
      }
    }
    return {unary_line(c, fmt::format("torch.full({}.tolist(), {}, dtype={})", x, fill, type))};
  }
  if (op == "Gather") {
    const int64_t axis = known_axis(c, c.node.int_attribute("axis", 0));
    // One index tensor at `axis`: the result is shape[:axis] + indices.shape + shape[axis+1:].
    return {unary_line(
        c, fmt::format("{0}[(slice(None),) * {2} + ({1} % {0}.shape[{2}],)]", x, c.in(1), axis))};
  }
  if (op.rfind("Reduce", 0) == 0) {
    static const std::map<std::string, std::string> kReduce = {{"ReduceMax", "torch.amax"},
                                                               {"ReduceMin", "torch.amin"},
                                                               {"ReduceSum", "torch.sum"},
                                                               {"ReduceMean", "torch.mean"}};
    std::vector<int64_t> axes = c.node.ints_attribute("axes");
    if (axes.empty() && c.has(1)) axes = c.required_ints(1, "axes");
    for (int64_t& a : axes) a = known_axis(c, a);
    if (axes.empty() && c.node.int_attribute("noop_with_empty_axes", 0) != 0)
      return {unary_line(c, x)};
    const std::string dims =
        axes.empty() ? fmt::format("tuple(range({}.dim()))", x) : py_tuple(axes);
    return {
        unary_line(c, fmt::format("{}({}, dim={}, keepdim={})", kReduce.at(op), x, dims,
                                  c.node.int_attribute("keepdims", 1) != 0 ? "True" : "False"))};
  }
  // Split
  const int64_t axis = c.node.int_attribute("axis", 0);
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < c.node.outputs.size(); ++i) outputs.push_back(c.out(i));
  std::string sizes;
  if (c.has(1)) {
    sizes = fmt::format("{}.tolist()", c.in(1));
  } else if (const Attribute* split = c.node.attribute("split")) {
    sizes = py_list(split->ints);
  } else {
    sizes = fmt::format("-(-{}.shape[{}] // {})", x, axis, outputs.size());
  }
  return {
      fmt::format("{}, = torch.split({}, {}, dim={})", fmt::join(outputs, ", "), x, sizes, axis)};
}

}  // namespace

void add_dynamic_writers(std::map<std::string, Writer>& t) {
  t["TopK"] = top_k;
  t["NonZero"] = [](const Call& c) {
    return std::vector<std::string>{unary_line(c, fmt::format("torch.nonzero({}).t()", c.in(0)))};
  };
  t["GatherND"] = gather_nd;
  t["ScatterElements"] = scatter_elements;
  t["Range"] = range;
  t["Mod"] = [](const Call& c) {
    const bool fmod = c.node.int_attribute("fmod", 0) != 0;
    return std::vector<std::string>{unary_line(
        c, fmt::format("{}({}, {})", fmod ? "torch.fmod" : "torch.remainder", c.in(0), c.in(1)))};
  };
  t["NonMaxSuppression"] = non_max_suppression;
  t["RoiAlign"] = roi_align;
  t["GridSample"] = grid_sample;
  // The table's static forms stay for every value whose shape the model fixes.
  for (const char* op :
       {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Shape", "ConstantOfShape",
        "Gather", "Split", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"}) {
    Writer fixed = t.at(op);
    const bool reduce = std::string(op).rfind("Reduce", 0) == 0;
    t[op] = [fixed, reduce](const Call& c) {
      // A reduction needs only the rank, which is known outside branches.
      const bool generic = reduce ? !c.input_value(0).shape.is_static() : node_shaped_by_data(c);
      return generic ? generic_shape_op(c) : fixed(c);
    };
  }
}

}  // namespace cleave::pytorch_detail
