// The op table of the PyTorch generator: one small writer per ONNX op.
#include "codegen/pytorch_ops.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

#include "codegen/pytorch_call.h"

namespace cleave {

namespace pytorch_detail {

std::string py_float(double x) {
  if (std::isnan(x)) return "float('nan')";
  if (std::isinf(x)) return x > 0 ? "float('inf')" : "float('-inf')";
  std::string text = fmt::format("{:.9g}", x);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string py_tuple(const std::vector<int64_t>& items) {
  if (items.size() == 1) return fmt::format("({},)", items[0]);
  return fmt::format("({})", fmt::join(items, ", "));
}

std::string py_list(const std::vector<int64_t>& items) {
  return fmt::format("[{}]", fmt::join(items, ", "));
}

std::string torch_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return "torch.float32";
    case DataType::kDouble:
      return "torch.float64";
    case DataType::kFloat16:
      return "torch.float16";
    case DataType::kInt64:
      return "torch.int64";
    case DataType::kInt32:
      return "torch.int32";
    case DataType::kInt16:
      return "torch.int16";
    case DataType::kInt8:
      return "torch.int8";
    case DataType::kUInt8:
      return "torch.uint8";
    case DataType::kBool:
      return "torch.bool";
    default:
      throw Error(fmt::format("element type {} has no torch dtype", dtype_name(dtype)));
  }
}

std::string unary_line(const Call& c, const std::string& expression) {
  return fmt::format("{} = {}", c.out(), expression);
}

std::string join_inputs(const Call& c, const char* op) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < c.node.inputs.size(); ++i) parts.push_back(c.in(i));
  return fmt::format("{}", fmt::join(parts, op));
}

bool opset_at_least(const Call& c, int64_t version) {
  auto it = c.graph.opset_imports.find("");
  return (it == c.graph.opset_imports.end() ? 17 : it->second) >= version;
}

}  // namespace pytorch_detail

namespace {

using namespace pytorch_detail;

// Element-wise ops that are one torch call of their one input.
void add_unary_writers(std::map<std::string, Writer>& t) {
  const auto simple = [&t](const std::string& op, const std::string& pattern) {
    t[op] = [pattern](const Call& c) {
      return std::vector<std::string>{unary_line(c, fmt::format(fmt::runtime(pattern), c.in(0)))};
    };
  };
  simple("Relu", "F.relu({})");
  simple("Sigmoid", "torch.sigmoid({})");
  simple("Tanh", "torch.tanh({})");
  simple("Exp", "torch.exp({})");
  simple("Log", "torch.log({})");
  simple("Sqrt", "torch.sqrt({})");
  simple("Neg", "torch.neg({})");
  simple("Abs", "torch.abs({})");
  simple("Reciprocal", "torch.reciprocal({})");
  simple("Floor", "torch.floor({})");
  simple("Ceil", "torch.ceil({})");
  simple("Round", "torch.round({})");
  simple("Sign", "torch.sign({})");
  simple("Erf", "torch.erf({})");
  simple("Sin", "torch.sin({})");
  simple("Cos", "torch.cos({})");
  simple("Softplus", "F.softplus({})");
  simple("Softsign", "F.softsign({})");
  simple("HardSwish", "F.hardswish({})");
  simple("Not", "torch.logical_not({})");
  simple("Identity", "{}");
  simple("Dropout", "{}");
}

const std::map<std::string, Writer>& writers() {
  static const std::map<std::string, Writer> table = [] {
    std::map<std::string, Writer> t;
    add_unary_writers(t);
    t["LeakyRelu"] = [](const Call& c) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("F.leaky_relu({}, {})", c.in(0),
                                    py_float(c.node.float_attribute("alpha", 0.01f))))};
    };
    t["Elu"] = [](const Call& c) {
      return std::vector<std::string>{unary_line(
          c,
          fmt::format("F.elu({}, {})", c.in(0), py_float(c.node.float_attribute("alpha", 1.0f))))};
    };
    t["HardSigmoid"] = [](const Call& c) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("torch.clamp({} * {} + {}, 0.0, 1.0)", c.in(0),
                                    py_float(c.node.float_attribute("alpha", 0.2f)),
                                    py_float(c.node.float_attribute("beta", 0.5f))))};
    };
    t["Gelu"] = [](const Call& c) {
      const std::string approximate = c.node.string_attribute("approximate", "none");
      return std::vector<std::string>{
          unary_line(c, fmt::format("F.gelu({}, approximate='{}')", c.in(0), approximate))};
    };
    t["PRelu"] = [](const Call& c) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("torch.where({0} < 0, {0} * {1}, {0})", c.in(0), c.in(1)))};
    };
    t["Clip"] = [](const Call& c) {
      std::string low = "None", high = "None";
      if (opset_at_least(c, 11)) {
        if (c.has(1)) low = c.const_scalar(1) ? py_float(*c.const_scalar(1)) : c.in(1);
        if (c.has(2)) high = c.const_scalar(2) ? py_float(*c.const_scalar(2)) : c.in(2);
      } else {
        if (c.node.attribute("min")) low = py_float(c.node.float_attribute("min", 0));
        if (c.node.attribute("max")) high = py_float(c.node.float_attribute("max", 0));
      }
      return std::vector<std::string>{
          unary_line(c, fmt::format("torch.clamp({}, {}, {})", c.in(0), low, high))};
    };
    const auto binary = [&t](const std::string& op, const std::string& pattern) {
      t[op] = [pattern](const Call& c) {
        return std::vector<std::string>{
            unary_line(c, fmt::format(fmt::runtime(pattern), c.in(0), c.in(1)))};
      };
    };
    binary("Add", "{} + {}");
    binary("Sub", "{} - {}");
    binary("Mul", "{} * {}");
    binary("Pow", "torch.pow({}, {})");
    binary("Equal", "torch.eq({}, {})");
    binary("Less", "torch.lt({}, {})");
    binary("LessOrEqual", "torch.le({}, {})");
    binary("Greater", "torch.gt({}, {})");
    binary("GreaterOrEqual", "torch.ge({}, {})");
    binary("And", "torch.logical_and({}, {})");
    binary("Or", "torch.logical_or({}, {})");
    binary("Xor", "torch.logical_xor({}, {})");
    t["Div"] = [](const Call& c) {
      const DataType type = c.graph.value(c.node.outputs[0]).dtype;
      const bool integer =
          type != DataType::kFloat && type != DataType::kDouble && type != DataType::kFloat16;
      return std::vector<std::string>{unary_line(
          c, integer ? fmt::format("torch.div({}, {}, rounding_mode='trunc')", c.in(0), c.in(1))
                     : fmt::format("{} / {}", c.in(0), c.in(1)))};
    };
    t["Where"] = [](const Call& c) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("torch.where({}, {}, {})", c.in(0), c.in(1), c.in(2)))};
    };
    t["Sum"] = [](const Call& c) {
      return std::vector<std::string>{unary_line(c, join_inputs(c, " + "))};
    };
    t["Mean"] = [](const Call& c) {
      return std::vector<std::string>{
          unary_line(c, fmt::format("({}) / {}", join_inputs(c, " + "), c.node.inputs.size()))};
    };
    const auto fold = [&t](const std::string& op, const char* function) {
      t[op] = [function](const Call& c) {
        std::string y = c.in(0);
        for (std::size_t i = 1; i < c.node.inputs.size(); ++i)
          y = fmt::format("{}({}, {})", function, y, c.in(i));
        return std::vector<std::string>{unary_line(c, y)};
      };
    };
    fold("Max", "torch.maximum");
    fold("Min", "torch.minimum");
    add_layer_writers(t);
    add_resize_writers(t);
    add_quantized_writers(t);
    add_dynamic_writers(t);
    add_rnn_writers(t);
    add_control_writers(t);
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> pytorch_lines(const Graph& graph, NodeId node, const PythonName& name) {
  const Node& n = graph.node(node);
  Call call{graph, node, n, name};
  const bool standard = n.domain.empty() || n.domain == "ai.onnx";
  auto it = writers().find(standard ? n.op_type : n.domain + "." + n.op_type);
  if (it == writers().end() && !standard) {
    call.fail(fmt::format("op {}.{} is not in the standard domain", n.domain, n.op_type));
  }
  if (it == writers().end()) call.fail(fmt::format("op {} has none", n.op_type));
  return it->second(call);
}

std::vector<std::string> pytorch_op_types() {
  std::vector<std::string> names;
  for (const auto& [op, writer] : writers()) names.push_back(op);
  return names;
}

}  // namespace cleave
