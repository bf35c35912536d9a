// Flattening a graph into SSA instructions and marking live ones.
#include "stream/instructions.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <map>

namespace cleave {

InstructionProgram to_instructions(const Graph& graph) {
  InstructionProgram p;
  std::map<ValueId, int> var_of;
  const auto add = [&](Instruction in) {
    in.result = static_cast<int>(p.instructions.size());
    p.instructions.push_back(std::move(in));
    return p.instructions.back().result;
  };
  for (std::size_t i = 0; i < graph.inputs().size(); ++i) {
    Instruction in;
    in.op = "placeholder";
    in.value = graph.inputs()[i];
    in.input_index = static_cast<int>(i);
    var_of[graph.inputs()[i]] = add(in);
  }
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    Instruction in;
    in.op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    in.node = id;
    for (const auto& [key, attribute] : node.attributes) {
      if (attribute.kind == AttributeKind::kInt) in.params.push_back(attribute.i);
      if (attribute.kind == AttributeKind::kInts) {
        in.params.insert(in.params.end(), attribute.ints.begin(), attribute.ints.end());
      }
    }
    for (ValueId v : node.inputs) {
      if (v == kNoValue || graph.value(v).initializer) continue;
      const auto it = var_of.find(v);
      if (it == var_of.end()) {
        throw Error(fmt::format("{}: reads \"{}\", which no node or input produces",
                                graph.describe(id), graph.value(v).name));
      }
      in.args.push_back(it->second);
    }
    if (node.outputs.size() == 1) {
      in.value = node.outputs[0];
      var_of[node.outputs[0]] = add(in);
      continue;
    }
    const int tuple = add(in);
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      Instruction get;
      get.op = "getitem";
      get.params = {static_cast<int64_t>(o)};
      get.args = {tuple};
      get.value = node.outputs[o];
      var_of[node.outputs[o]] = add(get);
    }
  }
  for (ValueId v : graph.outputs()) {
    const auto it = var_of.find(v);
    if (it == var_of.end()) {
      throw Error(fmt::format("graph output \"{}\" is a constant; a stream has nothing to push",
                              graph.value(v).name));
    }
    p.outputs.push_back(it->second);
  }
  // Liveness: backwards from the outputs.
  for (Instruction& in : p.instructions) in.live = false;
  std::vector<int> work = p.outputs;
  while (!work.empty()) {
    const int v = work.back();
    work.pop_back();
    if (p.instructions[v].live) continue;
    p.instructions[v].live = true;
    for (int a : p.instructions[v].args) work.push_back(a);
  }
  return p;
}

std::string print_instructions(const InstructionProgram& p) {
  std::string out;
  for (const Instruction& in : p.instructions) {
    std::vector<std::string> args;
    for (int a : in.args) args.push_back(fmt::format("var{}", a));
    out += fmt::format("var{} = {}{}({}){}\n", in.result, in.op,
                       in.params.empty() ? "" : fmt::format("<{}>", fmt::join(in.params, ", ")),
                       fmt::join(args, ", "), in.live ? "" : "  # dead");
  }
  std::vector<std::string> outs;
  for (int o : p.outputs) outs.push_back(fmt::format("var{}", o));
  out += fmt::format("return {}\n", fmt::join(outs, ", "));
  return out;
}

}  // namespace cleave
