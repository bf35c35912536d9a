// A plan's values, steps and arena offsets as the C++ generators fix them (worker or rank form).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpp_emitter.h"
#include "codegen/weights_file.h"
#include "codegen/worker_program.h"
#include "ir/graph.h"
#include "runtime/buffer_plan.h"

namespace cleave {

/// One entry of the generated value table (StaticValue, with what the generator knows).
struct ProgramValue {
  ProgramValue(std::string value_name, int value_kind)
      : name(std::move(value_name)), kind(value_kind) {}
  std::string name;
  int kind = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> dims;
  int alias_of = -1;
  bool blocked = false;
  ValueId graph_value = kNoValue;  ///< kNoValue for outputs the graph leaves unnamed.
  NodeId producer = -1;
  /// In-place Concat: the value (index) whose buffer holds this one's bytes, `in_place_offset`
  /// bytes in, as `cleave run` places a Concat's inputs (place_concat_inputs); -1: its own.
  int in_place_of = -1;
  std::size_t in_place_offset = 0;
};

/// Everything fixed at generation time for one graph and plan.
struct ProgramLayout {
  std::string graph_text;  ///< Without initializer data.
  WeightsFile weights;
  std::vector<ProgramValue> values;          ///< Graph inputs, constants, then each node's outputs.
  std::vector<int> index_of;                 ///< Per ValueId: index into `values`, or -1.
  std::vector<std::vector<int>> outputs_of;  ///< Per NodeId: its output values.
  std::vector<int> step_of_node;             ///< Per NodeId: its step, steps in worker order.
  std::vector<int> step_values;
  std::string step_table;  ///< The StaticStep initializers.
  int step_count = 0;
  BufferLayout arena;
  std::size_t unshared_bytes = 0;
  int run_time_steps = 0;  ///< Steps whose outputs are sized during the run (run_time_nodes).
  int concat_inputs_in_place = 0;  ///< Values written straight into a Concat's output.
};

/// Checks the graph's inputs and outputs (inputs float: the C API passes float buffers;
/// `float_io` false lifts that rule for programs without a C API; outputs computed by a
/// node), prepares every kernel once for its output specs and plans the arena from each
/// value's lifetime on its worker (run-time values outside it). The inputs of a Concat that
/// `cleave run` writes in place (place_concat_inputs over these specs) get their offsets
/// inside the Concat's buffer, whose kernel then skips their copy. Throws Error naming the
/// input or output refused.
ProgramLayout lay_out_program(const Graph& graph, const WorkerProgram& program,
                              const CppCodegenOptions& options, bool float_io = true);

/// "f32[1,8,16,16] blocked": a value's type as the generated comments show it.
std::string type_text(const ProgramValue& value);
/// Elements of the value as the preparing run shaped it: known even where the model leaves a
/// shape symbolic (an Einsum's output, which shape inference does not cover).
int64_t element_count(const ProgramValue& value);

/// The comment after a `step(k)` call: the node, its inputs and where each output lives.
std::string step_comment(const Graph& graph, const ProgramLayout& layout, NodeId id);

/// tables.cc: the graph text, value and step tables and kTables, whose worker functions are
/// `worker_pointers` ("nullptr" where the program runs no worker threads); `extra` is appended
/// inside the namespace (the rank program's tables).
std::string tables_source(const Graph& graph, const WorkerProgram& program,
                          const CppCodegenOptions& options, const ProgramLayout& layout,
                          int channel_count, const std::string& worker_pointers,
                          const std::string& extra = "");

}  // namespace cleave
