// The PyTorch op table's ops whose results follow the data: TopK, NonZero, NonMaxSuppression,
// GatherND, ScatterElements, Range, Mod, RoiAlign and GridSample.
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

std::vector<std::string> gather_nd(const Call& c) {
  if (c.node.int_attribute("batch_dims", 0) != 0) c.fail("batch_dims other than 0");
  const std::string data = c.in(0), index = c.in(1);
  return {unary_line(
      c, fmt::format("{0}[tuple({1}.reshape(-1, {1}.shape[-1]).t())].reshape(tuple({1}.shape[:-1]) "
                     "+ tuple({0}.shape[{1}.shape[-1]:]))",
                     data, index))};
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

// torchvision's roi_align is ONNX's average mode: aligned=True is half_pixel.
std::vector<std::string> roi_align(const Call& c) {
  if (c.node.string_attribute("mode", "avg") != "avg") c.fail("mode 'max' (avg maps)");
  const std::string transform = c.node.string_attribute(
      "coordinate_transformation_mode", opset_at_least(c, 16) ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    c.fail(fmt::format("coordinate_transformation_mode '{}'", transform));
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
}

}  // namespace cleave::pytorch_detail
