// The generated program's value table, steps and static arena, shared by worker and rank forms.
#include "codegen/program_layout.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/kernel_specs.h"
#include "codegen_runtime/static_program.h"
#include "runtime/concat_placement.h"
#include "runtime/executor.h"
#include "runtime/run_time_shapes.h"

namespace cleave {

namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, ","));
}

void check_inputs_and_outputs(const Graph& graph, bool float_io) {
  for (ValueId id : graph.inputs()) {
    if (float_io && graph.value(id).dtype != DataType::kFloat) {
      throw Error(fmt::format("input '{}' is {}; the generated C API passes float32 buffers",
                              graph.value(id).name, dtype_name(graph.value(id).dtype)));
    }
  }
  for (ValueId id : graph.outputs()) {
    const Value& value = graph.value(id);
    if (value.producer < 0) {
      throw Error(
          fmt::format("output '{}' is not computed by a node; nothing to generate", value.name));
    }
  }
}

// The value table: graph inputs, constants, then each node's outputs as its kernel makes them.
void list_values(const Graph& graph, const std::vector<std::vector<OutputSpec>>& specs,
                 const std::vector<bool>& run_time, ProgramLayout& out) {
  out.index_of.assign(graph.value_capacity(), -1);
  for (ValueId id : graph.inputs()) {
    const Value& v = graph.value(id);
    ProgramValue value(v.name, StaticValue::kGraphInput);
    value.dtype = v.dtype;
    value.dims = v.shape.sizes();
    value.bytes = plain_byte_size(v.dtype, value.dims);
    value.graph_value = id;
    out.index_of[id] = static_cast<int>(out.values.size());
    out.values.push_back(value);
  }
  for (const WeightEntry& entry : out.weights.entries) {
    ProgramValue value(entry.name, StaticValue::kConstant);
    value.offset = entry.offset;
    value.bytes = entry.bytes;
    value.dtype = entry.dtype;
    value.dims = entry.shape;
    value.graph_value = entry.value;
    out.index_of[entry.value] = static_cast<int>(out.values.size());
    out.values.push_back(value);
  }
  out.outputs_of.assign(graph.node_capacity(), {});
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    for (std::size_t i = 0; i < specs[id].size(); ++i) {
      const OutputSpec& spec = specs[id][i];
      const bool named = i < node.outputs.size() && node.outputs[i] != kNoValue;
      ProgramValue value(
          named ? graph.value(node.outputs[i]).name : fmt::format("{}#{}", graph.describe(id), i),
          run_time[id] ? StaticValue::kRunTime : StaticValue::kActivation);
      value.dtype = spec.dtype;
      value.dims = spec.shape;
      value.blocked = spec.layout.has_value();
      value.bytes = spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
      value.producer = id;
      // A run-time step's views are the runner's business (its input keeps its own slot).
      if (spec.alias_of >= 0 && !run_time[id])
        value.alias_of = out.index_of.at(node.inputs.at(spec.alias_of));
      if (named) {
        value.graph_value = node.outputs[i];
        out.index_of[node.outputs[i]] = static_cast<int>(out.values.size());
      }
      out.outputs_of[id].push_back(static_cast<int>(out.values.size()));
      out.values.push_back(value);
    }
    if (run_time[id]) ++out.run_time_steps;
  }
}

// In-place Concat, planned as `cleave run` plans it after its first run (place_concat_inputs
// over the prepared kernels' specs): a placed value's step writes into its Concat's buffer, and
// the Concat's kernel skips the copy of an input already in place. Run-time steps' values have
// no arena place and stay out, as do nodes no worker runs.
void place_in_concats(const Graph& graph, const WorkerProgram& program,
                      const std::vector<std::vector<OutputSpec>>& specs,
                      const std::vector<bool>& run_time, ProgramLayout& out) {
  const ConcatPlacement placement =
      place_concat_inputs(graph, [&](ValueId value) -> const OutputSpec* {
        const Value& v = graph.value(value);
        if (v.producer < 0 || v.initializer || run_time[v.producer] ||
            program.worker_of_node[v.producer] < 0) {
          return nullptr;
        }
        const auto& outputs = graph.node(v.producer).outputs;
        const auto index = static_cast<std::size_t>(
            std::find(outputs.begin(), outputs.end(), value) - outputs.begin());
        return index < specs[v.producer].size() ? &specs[v.producer][index] : nullptr;
      });
  for (std::size_t value = 0; value < placement.slots.size(); ++value) {
    const std::optional<BufferSlot>& slot = placement.slots[value];
    if (!slot || slot->root == static_cast<ValueId>(value)) continue;
    ProgramValue& placed = out.values.at(out.index_of.at(value));
    placed.in_place_of = out.index_of.at(slot->root);
    placed.in_place_offset = slot->byte_offset;
  }
  out.concat_inputs_in_place = placement.values_in_place;
}

// Lifetimes: per storage root (a Concat's buffer with the values placed in it), the steps of
// its worker that touch it or any view of it; then one arena offset per root. Run-time values have
// no place in it; a value a run-time step reads keeps its own slot for the whole run (the step may
// view it under another name, which the arena's lifetimes cannot follow).
void plan_arena(const Graph& graph, const WorkerProgram& program, const std::vector<bool>& run_time,
                ProgramLayout& out) {
  std::vector<ProgramValue>& values = out.values;
  // A view's own bytes are its base's; a placed base's are its Concat's buffer's (whose
  // placement slot already names the outermost buffer).
  const auto base_of = [&](int v) {
    while (values[v].alias_of >= 0) v = values[v].alias_of;
    return v;
  };
  const auto root_of = [&](int v) {
    v = base_of(v);
    return values[v].in_place_of >= 0 ? values[v].in_place_of : v;
  };
  std::map<int, BufferRequest> requests;  // By root value index.
  for (std::size_t v = 0; v < values.size(); ++v) {
    const int root = root_of(static_cast<int>(v));
    if (values[root].kind == StaticValue::kConstant || values[root].kind == StaticValue::kRunTime)
      continue;
    const ProgramValue& value = values[v];
    auto [it, fresh] = requests.try_emplace(root);
    BufferRequest& request = it->second;
    if (fresh) {
      request.bytes = values[root].bytes;
      request.region = values[root].kind == StaticValue::kGraphInput
                           ? -1
                           : program.worker_of_node[values[root].producer];
      request.first = request.last = values[root].kind == StaticValue::kGraphInput
                                         ? 0
                                         : program.position_of_node[values[root].producer];
    }
    if (value.producer >= 0) {
      request.first = std::min(request.first, program.position_of_node[value.producer]);
      request.last = std::max(request.last, program.position_of_node[value.producer]);
      // A buffer that steps of two workers write lives the whole run (positions of two
      // workers do not compare).
      if (program.worker_of_node[value.producer] != request.region) request.region = -1;
    }
    if (value.graph_value == kNoValue) continue;
    const Value& graph_value = graph.value(value.graph_value);
    if (graph_value.is_graph_output || !program.remote_readers[value.graph_value].empty())
      request.region = -1;
    for (NodeId reader : graph.consumers(value.graph_value)) {
      request.last = std::max(request.last, program.position_of_node[reader]);
      if (run_time[reader]) request.region = -1;
    }
  }
  std::vector<int> roots;
  std::vector<BufferRequest> request_list;
  for (auto& [root, request] : requests) {
    if (request.region < 0) request.first = 0, request.last = 0;
    roots.push_back(root);
    request_list.push_back(request);
  }
  out.arena = plan_buffers(request_list);
  out.unshared_bytes = 0;
  for (const BufferRequest& request : request_list) out.unshared_bytes += request.bytes;
  for (const ProgramValue& value : values)  // Without reuse, a placed value has its own buffer.
    if (value.in_place_of >= 0) out.unshared_bytes += value.bytes;
  std::vector<std::size_t> offset_of_root(values.size(), 0);
  for (std::size_t r = 0; r < roots.size(); ++r) offset_of_root[roots[r]] = out.arena.offsets[r];
  for (std::size_t v = 0; v < values.size(); ++v) {
    if (values[v].kind == StaticValue::kConstant || values[v].kind == StaticValue::kRunTime)
      continue;
    const int root = root_of(static_cast<int>(v));
    values[v].offset =
        values[root].kind == StaticValue::kConstant
            ? 0
            : offset_of_root[root] + values[base_of(static_cast<int>(v))].in_place_offset;
  }
}

// Steps in worker order.
void list_steps(const Graph& graph, const WorkerProgram& program, ProgramLayout& out) {
  out.step_of_node.assign(graph.node_capacity(), -1);
  for (int w = 0; w < program.workers; ++w) {
    for (NodeId id : program.order[w]) {
      const Node& node = graph.node(id);
      const int inputs_begin = static_cast<int>(out.step_values.size());
      for (ValueId input : node.inputs)
        out.step_values.push_back(input == kNoValue ? -1 : out.index_of[input]);
      const int outputs_begin = static_cast<int>(out.step_values.size());
      for (int v : out.outputs_of[id]) out.step_values.push_back(v);
      std::string first_output;
      for (ValueId output : node.outputs) {
        if (output != kNoValue) {
          first_output = graph.value(output).name;
          break;
        }
      }
      out.step_table += fmt::format(
          "    {{{}, {}, {}, {}, {}, {}, {}}},\n", cpp_string_literal(graph.describe(id)),
          cpp_string_literal(first_output), w, inputs_begin, outputs_begin, outputs_begin,
          static_cast<int>(out.step_values.size()));
      out.step_of_node[id] = out.step_count++;
    }
  }
}

}  // namespace

std::string type_text(const ProgramValue& value) {
  return fmt::format("{}[{}]{}{}", dtype_name(value.dtype), dims_text(value.dims),
                     value.blocked ? " blocked" : "",
                     value.kind == StaticValue::kRunTime ? " (shape at run time)" : "");
}

int64_t element_count(const ProgramValue& value) {
  int64_t count = 1;
  for (int64_t dim : value.dims) count *= dim;
  return count;
}

ProgramLayout lay_out_program(const Graph& graph, const WorkerProgram& program,
                              const CppCodegenOptions& options, bool float_io) {
  ProgramLayout out;
  out.graph_text = graph_text_without_weights(graph);
  check_inputs_and_outputs(graph, float_io);
  out.weights = make_weights_file(graph);
  const std::vector<std::vector<OutputSpec>> specs = prepare_kernel_specs(
      graph, program.threads_per_worker, options.blocked_layouts, options.family);
  const std::vector<bool> run_time = run_time_nodes(graph);
  list_values(graph, specs, run_time, out);
  place_in_concats(graph, program, specs, run_time, out);
  plan_arena(graph, program, run_time, out);
  list_steps(graph, program, out);
  return out;
}

std::string step_comment(const Graph& graph, const ProgramLayout& layout, NodeId id) {
  const Node& node = graph.node(id);
  std::vector<std::string> inputs;
  for (ValueId input : node.inputs) {
    inputs.push_back(input == kNoValue ? "_" : layout.values[layout.index_of[input]].name);
  }
  std::vector<std::string> outputs;
  for (int v : layout.outputs_of[id]) {
    const ProgramValue& value = layout.values[v];
    outputs.push_back(
        fmt::format("{} {} {}", value.name, type_text(value),
                    value.kind == StaticValue::kRunTime ? "sized at run time"
                    : value.alias_of >= 0    ? "view of " + layout.values[value.alias_of].name
                    : value.in_place_of >= 0 ? fmt::format("arena+{}, in place in {}", value.offset,
                                                           layout.values[value.in_place_of].name)
                                             : fmt::format("arena+{}", value.offset)));
  }
  return fmt::format("{}: {} -> {}", graph.describe(id), fmt::join(inputs, ", "),
                     fmt::join(outputs, "; "));
}

std::string tables_source(const Graph& graph, const WorkerProgram& program,
                          const CppCodegenOptions& options, const ProgramLayout& layout,
                          int channel_count, const std::string& worker_pointers,
                          const std::string& extra) {
  std::string dims_arrays;
  std::string value_table;
  for (std::size_t v = 0; v < layout.values.size(); ++v) {
    const ProgramValue& value = layout.values[v];
    dims_arrays += fmt::format("const int64_t kDims{}[] = {{{}}};\n", v,
                               value.dims.empty() ? "0" : dims_text(value.dims));
    value_table += fmt::format("    {{{}, {}, {}, {}, {}, {}, kDims{}, {}}},  // {}\n",
                               cpp_string_literal(value.name), value.kind, value.offset,
                               value.bytes, static_cast<int>(value.dtype), value.dims.size(), v,
                               value.alias_of, type_text(value));
  }
  std::vector<int> cores;
  for (int w = 0; w < program.workers; ++w) {
    for (int k = 0; k < program.threads_per_worker; ++k) {
      cores.push_back(k < static_cast<int>(program.cores[w].size()) ? program.cores[w][k] : -1);
    }
  }
  std::vector<int> graph_inputs, graph_outputs;
  for (ValueId id : graph.inputs()) graph_inputs.push_back(layout.index_of[id]);
  for (ValueId id : graph.outputs()) graph_outputs.push_back(layout.index_of[id]);
  const auto int_list = [](const std::vector<int>& items) {
    return items.empty() ? std::string("0") : fmt::format("{}", fmt::join(items, ", "));
  };
  return fmt::format(
      "// Every constant of the generated program {}: graph text, value places, steps.\n"
      "#include \"program.h\"\n\nnamespace {} {{\n\nnamespace {{\n\n"
      "const char* kGraphText =\n    {};\n\n{}\n"
      "const cleave::StaticValue kValues[] = {{\n{}}};\n\n"
      "const cleave::StaticStep kSteps[] = {{\n{}}};\n\n"
      "const int kStepValues[] = {{{}}};\n"
      "const int kGraphInputs[] = {{{}}};\n"
      "const int kGraphOutputs[] = {{{}}};\n"
      "const int kWorkerCores[] = {{{}}};\n"
      "const cleave::StaticWorkerFunction kWorkers[] = {{{}}};\n\n}}  // namespace\n\n"
      "const cleave::StaticProgramTables kTables = {{\n"
      "    {}, kGraphText, {}, {},\n    {}, {}, {}, {}, kWorkerCores,\n"
      "    kValues, {}, kSteps, {}, kStepValues, {},\n"
      "    kGraphInputs, {}, kGraphOutputs, {}, {}, kWorkers}};\n{}\n}}  // namespace {}\n",
      options.model_name, options.code_namespace, cpp_string_literal(layout.graph_text),
      dims_arrays, value_table, layout.step_table, int_list(layout.step_values),
      int_list(graph_inputs), int_list(graph_outputs), int_list(cores), worker_pointers,
      cpp_string_literal(options.model_name), cpp_string_literal(options.weights_file),
      layout.weights.bytes.size(), cpp_string_literal(to_string(options.family)),
      options.blocked_layouts ? 1 : 0, program.workers, program.threads_per_worker,
      layout.values.size(), layout.step_count, channel_count, graph_inputs.size(),
      graph_outputs.size(), layout.arena.arena_bytes, extra, options.code_namespace);
}

}  // namespace cleave
