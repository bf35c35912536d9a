// The PyTorch op table's control flow: If as a Python if/else over its branches, and Constant.
#include <cctype>
#include <set>

#include "codegen/pytorch_call.h"
#include "ir/scope.h"

namespace cleave::pytorch_detail {

namespace {

// Literals past this many elements would bury the code; such constants belong in weights.bin.
constexpr int64_t kMaxLiteralElements = 4096;

// torch.tensor(...) of a constant tensor's values.
std::string tensor_literal(const Call& c, const TensorData& data) {
  if (!data.bytes) c.fail("a constant without data");
  if (data.element_count() > kMaxLiteralElements)
    c.fail(fmt::format("a constant of {} elements inside a branch", data.element_count()));
  std::vector<std::string> items;
  switch (data.dtype) {
    case DataType::kFloat:
      for (float x : data.as<float>()) items.push_back(py_float(x));
      break;
    case DataType::kDouble:
      for (double x : data.as<double>()) items.push_back(py_float(x));
      break;
    case DataType::kInt64:
      for (int64_t x : data.as<int64_t>()) items.push_back(std::to_string(x));
      break;
    case DataType::kInt32:
      for (int32_t x : data.as<int32_t>()) items.push_back(std::to_string(x));
      break;
    case DataType::kBool:
      for (uint8_t x : data.as<uint8_t>()) items.push_back(x ? "True" : "False");
      break;
    default:
      c.fail(fmt::format("a {} constant", dtype_name(data.dtype)));
  }
  return fmt::format("torch.tensor([{}], dtype={}).reshape({})", fmt::join(items, ", "),
                     torch_dtype(data.dtype), py_tuple(data.dims));
}

std::vector<std::string> constant(const Call& c) {
  if (const Attribute* value = c.node.attribute("value"))
    return {unary_line(c, tensor_literal(c, value->t))};
  if (const Attribute* value = c.node.attribute("value_float"))
    return {unary_line(c, fmt::format("torch.tensor({})", py_float(value->f)))};
  if (const Attribute* value = c.node.attribute("value_int"))
    return {unary_line(c, fmt::format("torch.tensor({})", value->i))};
  if (const Attribute* value = c.node.attribute("value_ints"))
    return {unary_line(c, fmt::format("torch.tensor({})", py_list(value->ints)))};
  c.fail("a value other than value, value_float, value_int or value_ints");
}

// Python names of one branch's values: "_<output>_<branch>_<name>", which no name of the
// enclosing code takes (those never start with an underscore); values the branch reads from the
// enclosing graphs keep the enclosing name.
class BranchNames {
 public:
  BranchNames(const Call& c, const Graph& body, const std::string& prefix)
      : names_(body.value_capacity()) {
    std::set<std::string> taken;
    for (ValueId id = 0; id < static_cast<ValueId>(body.value_capacity()); ++id) {
      const Value& v = body.value(id);
      if (v.producer < 0 && !v.initializer && !is_input(body, id)) {
        if (body.consumers(id).empty() && !v.is_graph_output) continue;
        // Read from an enclosing scope by name (ONNX's implicit capture).
        std::optional<ValueId> outer = c.graph.find_value(v.name);
        if (!outer)
          c.fail(fmt::format("a branch reads '{}', which no enclosing graph has", v.name));
        names_[id] = c.name(*outer);
        continue;
      }
      std::string base = prefix;
      for (char ch : v.name) {
        if (std::isalnum(static_cast<unsigned char>(ch))) {
          base += ch;
        } else if (base.back() != '_') {
          base += '_';
        }
      }
      std::string name = base;
      for (int k = 2; taken.count(name); ++k) name = fmt::format("{}_{}", base, k);
      taken.insert(name);
      names_[id] = name;
    }
  }
  std::string operator()(ValueId id) const { return names_.at(id); }

 private:
  static bool is_input(const Graph& body, ValueId id) {
    for (ValueId input : body.inputs()) {
      if (input == id) return true;
    }
    return false;
  }
  std::vector<std::string> names_;
};

// One branch's statements, indented under its if or else, ending with the If's outputs.
void write_branch(const Call& c, const char* attribute, const std::string& prefix,
                  std::vector<std::string>& lines) {
  const Attribute* branch = c.node.attribute(attribute);
  if (!branch || !branch->g) c.fail(fmt::format("no graph attribute '{}'", attribute));
  const Graph& body = *branch->g;
  if (body.outputs().size() != c.node.outputs.size())
    c.fail(fmt::format("{} has {} outputs for the node's {}", attribute, body.outputs().size(),
                       c.node.outputs.size()));
  const BranchNames names(c, body, prefix);
  const PythonName name = [&names](ValueId id) { return names(id); };
  const std::size_t first = lines.size();
  for (ValueId id : body.initializers())
    lines.push_back(
        fmt::format("{} = {}", names(id), tensor_literal(c, *body.value(id).initializer)));
  for (NodeId id : scoped_topological_order(body)) {
    lines.push_back("# " + body.describe(id));
    for (const std::string& line : pytorch_lines(body, id, name)) lines.push_back(line);
  }
  for (std::size_t k = 0; k < c.node.outputs.size(); ++k)
    lines.push_back(fmt::format("{} = {}", c.out(k), names(body.outputs()[k])));
  for (std::size_t i = first; i < lines.size(); ++i) lines[i] = "    " + lines[i];
}

std::vector<std::string> if_node(const Call& c) {
  // Prefixed with the If's output, so a branch nested in a branch never takes its parent's
  // names.
  const std::string prefix = "_" + c.out(0) + "_";
  std::vector<std::string> lines = {fmt::format("if bool({}):", c.in(0))};
  write_branch(c, "then_branch", prefix + "then_", lines);
  lines.push_back("else:");
  write_branch(c, "else_branch", prefix + "else_", lines);
  return lines;
}

}  // namespace

void add_control_writers(std::map<std::string, Writer>& t) {
  t["If"] = if_node;
  t["Constant"] = constant;
}

}  // namespace cleave::pytorch_detail
