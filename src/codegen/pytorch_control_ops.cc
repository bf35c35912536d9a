// The PyTorch op table's control flow: If as a Python if/else over its branches, Loop and Scan as
// Python loops over their bodies' nodes, and Constant.
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
        // Read from an enclosing scope by name (ONNX's implicit capture), here or by a body
        // nested in this one (which has no consumer here).
        std::optional<ValueId> outer = c.graph.find_value(v.name);
        if (outer) {
          names_[id] = c.name(*outer);
        } else if (!body.consumers(id).empty() || v.is_graph_output) {
          c.fail(fmt::format("a branch reads '{}', which no enclosing graph has", v.name));
        }
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

// A body graph's attribute, refused unless it is there.
const Graph& body_graph(const Call& c, const char* attribute) {
  const Attribute* body = c.node.attribute(attribute);
  if (!body || !body->g) c.fail(fmt::format("no graph attribute '{}'", attribute));
  return *body->g;
}

// A body's statements: its initializers, then its nodes in order.
std::vector<std::string> body_lines(const Call& c, const Graph& body, const BranchNames& names) {
  const PythonName name = [&names](ValueId id) { return names(id); };
  std::vector<std::string> lines;
  for (ValueId id : body.initializers())
    lines.push_back(
        fmt::format("{} = {}", names(id), tensor_literal(c, *body.value(id).initializer)));
  for (NodeId id : scoped_topological_order(body)) {
    lines.push_back("# " + body.describe(id));
    for (const std::string& line : pytorch_lines(body, id, name)) lines.push_back(line);
  }
  return lines;
}

void indent(std::vector<std::string>& lines, std::size_t first) {
  for (std::size_t i = first; i < lines.size(); ++i) lines[i] = "    " + lines[i];
}

// "a, b = c, d": every target takes its value from before the statement, as a loop's carried
// values must when one body output is another's input.
std::string assign_all(const std::vector<std::string>& targets,
                       const std::vector<std::string>& values) {
  return fmt::format("{}, = {},", fmt::join(targets, ", "), fmt::join(values, ", "));
}

// A prefix for a node's body names, from its first used output: a body nested in a body takes
// its names from its parent's, so they never meet.
std::string body_prefix(const Call& c) {
  for (std::size_t k = 0; k < c.node.outputs.size(); ++k) {
    if (c.out(k) != "_") return "_" + c.out(k) + "_";
  }
  return fmt::format("_node{}_", c.id);
}

// One branch's statements, indented under its if or else, ending with the If's outputs.
void write_branch(const Call& c, const char* attribute, const std::string& prefix,
                  std::vector<std::string>& lines) {
  const Graph& body = body_graph(c, attribute);
  if (body.outputs().size() != c.node.outputs.size())
    c.fail(fmt::format("{} has {} outputs for the node's {}", attribute, body.outputs().size(),
                       c.node.outputs.size()));
  const BranchNames names(c, body, prefix);
  const std::size_t first = lines.size();
  for (std::string& line : body_lines(c, body, names)) lines.push_back(std::move(line));
  for (std::size_t k = 0; k < c.node.outputs.size(); ++k)
    lines.push_back(fmt::format("{} = {}", c.out(k), names(body.outputs()[k])));
  indent(lines, first);
}

std::vector<std::string> if_node(const Call& c) {
  const std::string prefix = body_prefix(c);
  std::vector<std::string> lines = {fmt::format("if bool({}):", c.in(0))};
  write_branch(c, "then_branch", prefix + "then_", lines);
  lines.push_back("else:");
  write_branch(c, "else_branch", prefix + "else_", lines);
  return lines;
}

// Stacked scan outputs; none at all is an empty float tensor, as cleave's Loop and Scan give.
std::string stacked(const std::string& list, const std::string& axis) {
  return fmt::format("torch.stack({0}, {1}) if {0} else torch.zeros(0)", list, axis);
}

// A while loop over the body's nodes: the trip count and condition checked before each
// iteration, the carried values reassigned after it, the scan outputs collected to stack.
std::vector<std::string> loop_node(const Call& c) {
  const Graph& body = body_graph(c, "body");
  if (c.node.inputs.size() < 2 + captured_input_count(c.node))
    c.fail("fewer than two inputs (M and cond)");
  const std::size_t carried = c.node.inputs.size() - captured_input_count(c.node) - 2;
  if (c.node.outputs.size() < carried)
    c.fail(fmt::format("{} outputs for {} carried values", c.node.outputs.size(), carried));
  const std::size_t scans = c.node.outputs.size() - carried;
  if (body.inputs().size() != 2 + carried || body.outputs().size() != 1 + carried + scans)
    c.fail(
        fmt::format("the body has {} inputs and {} outputs for {} carried values and {} scan "
                    "outputs",
                    body.inputs().size(), body.outputs().size(), carried, scans));
  if (!c.has(0) && !c.has(1)) c.fail("neither a trip count nor a condition (it never ends)");
  const std::string prefix = body_prefix(c);
  const BranchNames names(c, body, prefix + "body_");
  const std::string step = prefix + "i", keep_on = prefix + "cond";
  std::vector<std::string> in, out, lists;
  for (std::size_t k = 0; k < carried; ++k) {
    in.push_back(names(body.inputs()[2 + k]));
    out.push_back(names(body.outputs()[1 + k]));
  }
  std::vector<std::string> lines = {
      fmt::format("{} = {}", keep_on, c.has(1) ? fmt::format("bool({})", c.in(1)) : "True"),
      fmt::format("{} = 0", step)};
  std::vector<std::string> initial;
  for (std::size_t k = 0; k < carried; ++k) initial.push_back(c.in(2 + k));
  if (carried > 0) lines.push_back(assign_all(in, initial));
  for (std::size_t k = 0; k < scans; ++k) {
    lists.push_back(fmt::format("{}scan{}", prefix, k));
    lines.push_back(lists.back() + " = []");
  }
  lines.push_back(fmt::format(
      "while {}{}:", c.has(0) ? fmt::format("{} < int({}) and ", step, c.in(0)) : "", keep_on));
  const std::size_t first = lines.size();
  lines.push_back(
      fmt::format("{} = torch.tensor({}, dtype=torch.int64)", names(body.inputs()[0]), step));
  lines.push_back(fmt::format("{} = torch.tensor({})", names(body.inputs()[1]), keep_on));
  for (std::string& line : body_lines(c, body, names)) lines.push_back(std::move(line));
  lines.push_back(fmt::format("{} = bool({})", keep_on, names(body.outputs()[0])));
  if (carried > 0) lines.push_back(assign_all(in, out));
  for (std::size_t k = 0; k < scans; ++k)
    lines.push_back(fmt::format("{}.append({})", lists[k], names(body.outputs()[1 + carried + k])));
  lines.push_back(fmt::format("{} += 1", step));
  indent(lines, first);
  for (std::size_t k = 0; k < carried; ++k)
    lines.push_back(fmt::format("{} = {}", c.out(k), in[k]));
  for (std::size_t k = 0; k < scans; ++k)
    lines.push_back(fmt::format("{} = {}", c.out(carried + k), stacked(lists[k], "0")));
  return lines;
}

// A for loop over the scanned axis, each scan input sliced (from the end when its direction is
// 1), each scan output stacked along its axis (reversed when its direction is 1). Scan-8 runs
// that loop per entry of its batch axis and stacks the entries; cleave runs its sequence_lens
// only at the full length, which the code checks.
std::vector<std::string> scan_node(const Call& c) {
  const bool batched = !opset_at_least(c, 9);
  const std::size_t first = batched ? 1 : 0;
  const Graph& body = body_graph(c, "body");
  const auto scan_inputs = static_cast<std::size_t>(c.node.int_attribute("num_scan_inputs", 0));
  const std::size_t own = c.node.inputs.size() - captured_input_count(c.node);
  if (scan_inputs < 1 || first + scan_inputs > own)
    c.fail(fmt::format("num_scan_inputs {} for {} inputs", scan_inputs, own));
  const std::size_t states = own - first - scan_inputs;
  if (c.node.outputs.size() < states)
    c.fail(fmt::format("{} outputs for {} states", c.node.outputs.size(), states));
  const std::size_t scans = c.node.outputs.size() - states;
  if (body.inputs().size() != states + scan_inputs ||
      body.outputs().size() != c.node.outputs.size())
    c.fail(fmt::format("the body has {} inputs and {} outputs for {} and {}", body.inputs().size(),
                       body.outputs().size(), states + scan_inputs, c.node.outputs.size()));
  const auto setting = [&](const char* key, std::size_t count) {
    std::vector<int64_t> values = c.node.ints_attribute(key);
    values.resize(count, 0);
    return values;
  };
  const std::vector<int64_t> in_axes = setting("scan_input_axes", scan_inputs),
                             in_reverse = setting(batched ? "directions" : "scan_input_directions",
                                                  scan_inputs),
                             out_axes = setting("scan_output_axes", scans),
                             out_reverse = setting("scan_output_directions", scans);
  const std::string prefix = body_prefix(c);
  const BranchNames names(c, body, prefix + "body_");
  const std::string step = prefix + "t", length = prefix + "steps", entry = prefix + "b";
  // A state or scan input: the whole tensor, or (Scan-8) the batch entry.
  const auto source = [&](std::size_t k) {
    return batched ? fmt::format("{}[{}]", c.in(first + k), entry) : c.in(first + k);
  };
  std::vector<std::string> lines, in, out, initial, lists, results;
  if (batched) {
    lines.push_back(
        fmt::format("{}entries = [[] for _ in range({})]", prefix, c.node.outputs.size()));
    lines.push_back(fmt::format("for {} in range({}.shape[0]):", entry, c.in(first + states)));
  }
  const std::size_t outer = lines.size();
  lines.push_back(fmt::format("{} = {}.shape[{}]", length, source(states), in_axes[0]));
  if (batched && c.has(0)) {
    lines.push_back(fmt::format("if int({}[{}]) != {}:", c.in(0), entry, length));
    lines.push_back(fmt::format(
        "    raise ValueError(\"{}: sequence_lens other than the full length\")", c.where()));
  }
  for (std::size_t k = 0; k < states; ++k) {
    in.push_back(names(body.inputs()[k]));
    out.push_back(names(body.outputs()[k]));
    initial.push_back(source(k));
  }
  if (states > 0) lines.push_back(assign_all(in, initial));
  for (std::size_t k = 0; k < scans; ++k) {
    lists.push_back(fmt::format("{}scan{}", prefix, k));
    lines.push_back(lists.back() + " = []");
  }
  lines.push_back(fmt::format("for {} in range({}):", step, length));
  const std::size_t inner = lines.size();
  for (std::size_t k = 0; k < scan_inputs; ++k) {
    lines.push_back(fmt::format("{} = {}.select({}, {})", names(body.inputs()[states + k]),
                                source(states + k), in_axes[k],
                                in_reverse[k] ? fmt::format("{} - 1 - {}", length, step) : step));
  }
  for (std::string& line : body_lines(c, body, names)) lines.push_back(std::move(line));
  if (states > 0) lines.push_back(assign_all(in, out));
  for (std::size_t k = 0; k < scans; ++k)
    lines.push_back(fmt::format("{}.append({})", lists[k], names(body.outputs()[states + k])));
  indent(lines, inner);
  results = in;
  for (std::size_t k = 0; k < scans; ++k) {
    results.push_back(
        stacked(out_reverse[k] ? lists[k] + "[::-1]" : lists[k], std::to_string(out_axes[k])));
  }
  for (std::size_t r = 0; r < results.size(); ++r) {
    lines.push_back(batched ? fmt::format("{}entries[{}].append({})", prefix, r, results[r])
                            : fmt::format("{} = {}", c.out(r), results[r]));
  }
  if (!batched) return lines;
  indent(lines, outer);
  for (std::size_t r = 0; r < results.size(); ++r)
    lines.push_back(fmt::format("{} = torch.stack({}entries[{}])", c.out(r), prefix, r));
  return lines;
}

}  // namespace

void add_control_writers(std::map<std::string, Writer>& t) {
  t["If"] = if_node;
  t["Loop"] = loop_node;
  t["Scan"] = scan_node;
  t["Constant"] = constant;
}

}  // namespace cleave::pytorch_detail
