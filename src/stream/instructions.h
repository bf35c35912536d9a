// The flattened SSA instruction form of a graph (thesis ch. 4.2): one `varN = op<...>(...)`
// per result, in a topological order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// One instruction: `var<result> = <op><params>(var<args>...)`. Graph inputs are
/// `placeholder()`, a node with several outputs is one tuple instruction followed by a
/// `getitem<i>` per output.
struct Instruction {
  int result = 0;
  std::string op;               ///< ONNX op type, "placeholder" or "getitem".
  std::vector<int64_t> params;  ///< getitem: the index; others: the node's int attributes.
  std::vector<int> args;        ///< Variables read (initializers are part of the op).
  NodeId node = -1;             ///< The graph node (for placeholders and getitem: -1).
  ValueId value = kNoValue;     ///< The graph value this result is (kNoValue for a tuple).
  int input_index = -1;         ///< Placeholders: which graph input.
  bool live = true;             ///< Reaches a graph output (liveness analysis).
};

struct InstructionProgram {
  std::vector<Instruction> instructions;  ///< instructions[i].result == i.
  std::vector<int> outputs;               ///< Variables returned, in graph output order.
};

/// Flattens `graph` into instructions and marks the live ones (those a graph output needs).
InstructionProgram to_instructions(const Graph& graph);

/// Prints the program in the thesis's grammar, one instruction a line, then `return ...`.
/// Dead instructions are marked with a trailing `  # dead`.
std::string print_instructions(const InstructionProgram& program);

}  // namespace cleave
