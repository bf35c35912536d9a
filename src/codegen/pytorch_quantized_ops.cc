// The PyTorch op table's int8 ops: quantize and dequantize as float math, the integer products
// as exact float64 sums requantized the way cleave's kernels do.
#include "codegen/pytorch_call.h"

namespace cleave::pytorch_detail {

namespace {

// Integer sums of 8-bit operands stay far below 2^53, so float64 products and convolutions
// compute them exactly in any order; torch has no integer convolution on the CPU.
constexpr const char* kSums = "torch.float64";

struct Range {
  int64_t low = 0, high = 0;
  std::string dtype;
};

// The saturation range of output `i`, which must be u8 or i8.
Range range_of_output(const Call& c, std::size_t i = 0) {
  const DataType type = c.graph.value(c.node.outputs.at(i)).dtype;
  if (type == DataType::kUInt8) return {0, 255, "torch.uint8"};
  if (type == DataType::kInt8) return {-128, 127, "torch.int8"};
  c.fail(fmt::format("output {} is {}; u8 or i8 is mapped", i, dtype_name(type)));
}

// Input `i` as an expression broadcasting along `axis` of a rank-`rank` tensor: reshaped to
// (1, .., -1, .., 1) when it holds one value per index of the axis, as it is when it holds one.
std::string along(const Call& c, std::size_t i, int64_t axis, std::size_t rank) {
  if (c.elements_in(i) == 1) return c.in(i);
  std::vector<int64_t> shape(rank, 1);
  shape.at(static_cast<std::size_t>(axis)) = -1;
  return fmt::format("{}.reshape({})", c.in(i), py_tuple(shape));
}

// Input `x` minus its optional zero point (input `zero`, along `axis`), in `type`.
std::string centered(const Call& c, std::size_t x, std::size_t zero, int64_t axis, std::size_t rank,
                     const char* type) {
  if (!c.has(zero)) return fmt::format("{}.to({})", c.in(x), type);
  return fmt::format("({}.to({}) - {}.to({}))", c.in(x), type, along(c, zero, axis, rank), type);
}

// The QuantizeLinear formula on expression `y` (float32): round half to even (torch.round),
// add the zero point, saturate.
std::string quantized(const Call& c, const std::string& y, const std::string& zero) {
  const Range range = range_of_output(c);
  return fmt::format("{} = torch.clamp(torch.round({}){}, {}, {}).to({})", c.out(), y,
                     zero.empty() ? "" : " + " + zero + ".to(torch.float32)", range.low, range.high,
                     range.dtype);
}

// The axis a QuantizeLinear/DequantizeLinear scale applies along: its `axis` for a per-axis
// scale, unused (0) for a per-tensor one.
int64_t scale_axis(const Call& c) {
  if (c.node.attribute("block_size")) c.fail("blocked quantization (block_size)");
  if (c.elements_in(1) == 1) return 0;
  return c.axis("axis", 1, c.shape_in(0).size());
}

std::vector<std::string> quantize_linear(const Call& c) {
  const std::size_t rank = c.shape_in(0).size();
  const int64_t axis = scale_axis(c);
  return {quantized(c, fmt::format("{} / {}", c.in(0), along(c, 1, axis, rank)),
                    c.has(2) ? along(c, 2, axis, rank) : "")};
}

std::vector<std::string> dequantize_linear(const Call& c) {
  const std::size_t rank = c.shape_in(0).size();
  const int64_t axis = scale_axis(c);
  return {fmt::format("{} = {}.to(torch.float32) * {}", c.out(),
                      centered(c, 0, 2, axis, rank, "torch.int32"), along(c, 1, axis, rank))};
}

// u8 over [min(0, min x), max(0, max x)]; all zeros keep scale 0 and zero point 0, as cleave's
// kernel does (ONNX's formula would divide by zero).
std::vector<std::string> dynamic_quantize_linear(const Call& c) {
  const std::string x = c.in(0), y = c.out(0), scale = c.out(1), zero = c.out(2);
  return {
      fmt::format("{} = (torch.clamp({}.max(), min=0.0) - torch.clamp({}.min(), max=0.0)) / 255.0",
                  scale, x, x),
      fmt::format("_divisor = torch.where({0} == 0, torch.ones_like({0}), {0})", scale),
      fmt::format("{} = torch.clamp(torch.round(0.0 - torch.clamp({}.min(), max=0.0) / _divisor), "
                  "0, 255)",
                  zero, x),
      fmt::format("{} = torch.clamp(torch.round({} / _divisor) + {}, 0, 255).to(torch.uint8)", y, x,
                  zero),
      fmt::format("{0} = {0}.to(torch.uint8)", zero)};
}

// Where an integer product keeps its operands, scales and zero points.
struct Slots {
  std::size_t x, x_zero, w, w_zero;
};

// The exact sums of an integer convolution into c.out(), padding reading as the zero point.
std::vector<std::string> convolution_sums(const Call& c, const Slots& at, const std::string& bias) {
  const auto weight = c.shape_in(at.w);
  if (weight.size() < 3 || weight.size() > 5)
    c.fail(fmt::format("weights of rank {}", weight.size()));
  const std::size_t r = weight.size() - 2;
  const std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  const auto strides = or_default(c.node.ints_attribute("strides"), r, 1);
  const auto dilations = or_default(c.node.ints_attribute("dilations"), r, 1);
  auto [begin, end] = spatial_pads(c, kernel, strides, dilations);
  std::vector<std::string> lines{
      fmt::format("{} = {}", c.out(), centered(c, at.x, at.x_zero, 0, r + 2, kSums))};
  std::vector<int64_t> padding = begin;
  if (begin != end) {
    lines.push_back(fmt::format("{0} = F.pad({0}, {1})", c.out(), torch_pad_list(begin, end)));
    padding.assign(r, 0);
  }
  lines.push_back(fmt::format(
      "{0} = F.conv{1}d({0}, {2}, {3}, stride={4}, padding={5}, dilation={6}, groups={7})", c.out(),
      r, centered(c, at.w, at.w_zero, 0, r + 2, kSums),
      bias.empty() ? "None" : bias + ".to(torch.float64)", py_tuple(strides), py_tuple(padding),
      py_tuple(dilations), c.node.int_attribute("group", 1)));
  return lines;
}

// The exact sums of an integer matrix product into c.out(); the second operand's zero point
// is one per column.
std::vector<std::string> product_sums(const Call& c, const Slots& at, const std::string& bias) {
  const std::size_t rank = c.shape_in(at.w).size();
  std::string sums = fmt::format("torch.matmul({}, {})", centered(c, at.x, at.x_zero, 0, 1, kSums),
                                 centered(c, at.w, at.w_zero, rank - 1, rank, kSums));
  if (!bias.empty()) sums += fmt::format(" + {}.to(torch.float64)", bias);
  return {fmt::format("{} = {}", c.out(), sums)};
}

// Sums (already in c.out()) to the output type: times x_scale·w_scale[channel]/y_scale in
// float32, as cleave's kernels compute the multiplier, then QuantizeLinear's formula.
std::vector<std::string> requantized(const Call& c, std::vector<std::string> lines,
                                     std::size_t x_scale, std::size_t w_scale, std::size_t y_scale,
                                     int64_t channel_axis) {
  const std::size_t rank = c.shape_out().size();
  const std::string multiplier = fmt::format("({} * {} / {})", c.in(x_scale),
                                             along(c, w_scale, channel_axis, rank), c.in(y_scale));
  lines.push_back(quantized(c, fmt::format("{}.to(torch.float32) * {}", c.out(), multiplier),
                            c.has(y_scale + 1) ? c.in(y_scale + 1) : ""));
  return lines;
}

std::vector<std::string> to_int32(const Call& c, std::vector<std::string> lines) {
  lines.push_back(fmt::format("{0} = {0}.to(torch.int32)", c.out()));
  return lines;
}

std::vector<std::string> qgemm(const Call& c) {
  if (c.node.int_attribute("transA", 0) != 0 || c.node.int_attribute("transB", 0) != 0 ||
      c.node.float_attribute("alpha", 1.0f) != 1.0f || !c.has(7)) {
    c.fail("QGemm is mapped without transposes, with alpha 1 and a quantized output");
  }
  const std::size_t rank = c.shape_out().size();
  return requantized(c, product_sums(c, {0, 2, 3, 5}, c.has(6) ? c.in(6) : ""), 1, 4, 7,
                     static_cast<int64_t>(rank) - 1);
}

// ONNX Runtime's QLinearAdd as cleave's kernel computes it: a·(a_scale/c_scale) +
// b·(b_scale/c_scale) + the zero points' fixed part in float32, each fused multiply-add as a
// float64 product and sum rounded to float32 (torch has no fma; the products are exact in
// float64, so only a double rounding can differ, and rarely).
std::vector<std::string> qlinear_add(const Call& c) {
  const std::string ratio_a = fmt::format("({} / {})", c.in(1), c.in(6));
  const std::string ratio_b = fmt::format("({} / {})", c.in(4), c.in(6));
  const auto as_float = [&](std::size_t i) {
    return c.has(i) ? c.in(i) + ".to(torch.float32)" : std::string("torch.tensor(0.0)");
  };
  const auto fma = [](const std::string& x, const std::string& y, const std::string& z) {
    return fmt::format(
        "({}.to(torch.float64) * {}.to(torch.float64) + {}.to(torch.float64))"
        ".to(torch.float32)",
        x, y, z);
  };
  const std::string fixed =
      fmt::format("({} - {})", as_float(7),
                  fma(ratio_a, as_float(2), fmt::format("({} * {})", ratio_b, as_float(5))));
  const std::string b_term = fma(c.in(3), ratio_b, fixed);
  return {quantized(c, fma(c.in(0), ratio_a, b_term), "")};
}

// ONNX Runtime's QLinearConcat as the DequantizeLinear → Concat → QuantizeLinear it replaces:
// each input dequantized, concatenated, quantized to the output's map (the same float math that
// cleave's table computes).
std::vector<std::string> qlinear_concat(const Call& c) {
  const std::size_t rank = c.shape_out().size();
  std::vector<std::string> parts;
  for (std::size_t k = 2; k < c.node.inputs.size(); k += 3) {
    parts.push_back(fmt::format("{}.to(torch.float32) * {}",
                                centered(c, k, k + 2, 0, rank, "torch.int32"), c.in(k + 1)));
  }
  const std::string joined = fmt::format("torch.cat([{}], dim={}) / {}", fmt::join(parts, ", "),
                                         c.axis("axis", 0, rank), c.in(0));
  return {quantized(c, joined, c.has(1) ? c.in(1) : "")};
}

}  // namespace

void add_quantized_writers(std::map<std::string, Writer>& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  t["ConvInteger"] = [](const Call& c) {
    return to_int32(c, convolution_sums(c, {0, 2, 1, 3}, ""));
  };
  t["MatMulInteger"] = [](const Call& c) { return to_int32(c, product_sums(c, {0, 2, 1, 3}, "")); };
  t["QLinearConv"] = [](const Call& c) {
    return requantized(c, convolution_sums(c, {0, 2, 3, 5}, c.has(8) ? c.in(8) : ""), 1, 4, 6, 1);
  };
  t["QLinearMatMul"] = [](const Call& c) {
    const std::size_t rank = c.shape_out().size();
    return requantized(c, product_sums(c, {0, 2, 3, 5}, ""), 1, 4, 6,
                       static_cast<int64_t>(rank) - 1);
  };
  t["com.microsoft.QGemm"] = qgemm;
  t["com.microsoft.QLinearAdd"] = qlinear_add;
  t["com.microsoft.QLinearConcat"] = qlinear_concat;
  // QDQ table fusion's lookup: the table indexed by each value's byte.
  t["com.cleave.ByteTable"] = [](const Call& c) -> std::vector<std::string> {
    return {
        fmt::format("{} = {}[{}.view(torch.uint8).to(torch.int64)]", c.out(), c.in(1), c.in(0))};
  };
}

}  // namespace cleave::pytorch_detail
