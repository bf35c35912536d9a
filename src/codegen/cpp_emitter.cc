// C++ generation: kernel specs found by one preparing run, a static arena, worker sources.
#include "codegen/cpp_emitter.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>

#include "codegen/cpp_templates.h"
#include "codegen/kernel_specs.h"
#include "codegen/static_program.h"
#include "codegen/weights_file.h"
#include "ir/text.h"
#include "runtime/buffer_plan.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"

namespace cleave {

namespace {

using namespace cpp_templates;

// One entry of the generated value table.
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
  ValueId graph_value = kNoValue;  // kNoValue for outputs the graph leaves unnamed.
  NodeId producer = -1;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, ","));
}

std::string type_text(const ProgramValue& value) {
  return fmt::format("{}[{}]{}", dtype_name(value.dtype), dims_text(value.dims),
                     value.blocked ? " blocked" : "");
}

}  // namespace

std::string cmake_cleave_library(const CppCodegenOptions& options) {
  return fmt::format(fmt::runtime(kCleaveLibrary), options.cleave_root, options.cleave_build);
}

std::string cpp_string_literal(const std::string& text) {
  std::string out;
  std::string line = "\"";
  for (char c : text) {
    switch (c) {
      case '\\':
        line += "\\\\";
        break;
      case '"':
        line += "\\\"";
        break;
      case '\t':
        line += "\\t";
        break;
      case '\n':
        line += "\\n\"";
        out += line + "\n    ";
        line = "\"";
        continue;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
          line += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
        } else {
          line += c;
        }
    }
  }
  return out + line + "\"";
}

std::string graph_text_without_weights(const Graph& graph) {
  Graph copy = graph;
  for (ValueId id : copy.initializers()) copy.value(id).initializer->bytes.reset();
  std::string text = print_graph(copy, INT_MAX);
  Graph parsed = parse_graph(text);
  if (print_graph(parsed, INT_MAX) != text) {
    throw Error(
        "the optimized graph does not read back the same from its text form, which the "
        "generated program embeds");
  }
  return text;
}

CppCodegenSummary emit_cpp(const Graph& graph, const WorkerProgram& program,
                           const CppCodegenOptions& options, FolderWriter& out) {
  const std::string graph_text = graph_text_without_weights(graph);
  for (ValueId id : graph.inputs()) {
    if (graph.value(id).dtype != DataType::kFloat) {
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
    if (value.dtype != DataType::kFloat) {
      throw Error(fmt::format("output '{}' is {}; the generated C API passes float32 buffers",
                              value.name, dtype_name(value.dtype)));
    }
  }
  const WeightsFile weights = make_weights_file(graph);
  const std::vector<std::vector<OutputSpec>> specs = prepare_kernel_specs(
      graph, program.threads_per_worker, options.blocked_layouts, options.family);

  // The value table: graph inputs, constants, then each node's outputs.
  std::vector<ProgramValue> values;
  std::vector<int> index_of(graph.value_capacity(), -1);
  for (ValueId id : graph.inputs()) {
    const Value& v = graph.value(id);
    ProgramValue value(v.name, StaticValue::kGraphInput);
    value.dtype = v.dtype;
    value.dims = v.shape.sizes();
    value.bytes = plain_byte_size(v.dtype, value.dims);
    value.graph_value = id;
    index_of[id] = static_cast<int>(values.size());
    values.push_back(value);
  }
  for (const WeightEntry& entry : weights.entries) {
    ProgramValue value(entry.name, StaticValue::kConstant);
    value.offset = entry.offset;
    value.bytes = entry.bytes;
    value.dtype = entry.dtype;
    value.dims = entry.shape;
    value.graph_value = entry.value;
    index_of[entry.value] = static_cast<int>(values.size());
    values.push_back(value);
  }
  std::vector<std::vector<int>> outputs_of(graph.node_capacity());
  for (NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    for (std::size_t i = 0; i < specs[id].size(); ++i) {
      const OutputSpec& spec = specs[id][i];
      const bool named = i < node.outputs.size() && node.outputs[i] != kNoValue;
      ProgramValue value(
          named ? graph.value(node.outputs[i]).name : fmt::format("{}#{}", graph.describe(id), i),
          StaticValue::kActivation);
      value.dtype = spec.dtype;
      value.dims = spec.shape;
      value.blocked = spec.layout.has_value();
      value.bytes = spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
      value.producer = id;
      if (spec.alias_of >= 0) value.alias_of = index_of.at(node.inputs.at(spec.alias_of));
      if (named) {
        value.graph_value = node.outputs[i];
        index_of[node.outputs[i]] = static_cast<int>(values.size());
      }
      outputs_of[id].push_back(static_cast<int>(values.size()));
      values.push_back(value);
    }
  }

  // Lifetimes: per storage root, the steps of its worker that touch it or any view of it.
  const auto root_of = [&](int v) {
    while (values[v].alias_of >= 0) v = values[v].alias_of;
    return v;
  };
  std::map<int, BufferRequest> requests;  // By root value index.
  for (std::size_t v = 0; v < values.size(); ++v) {
    const int root = root_of(static_cast<int>(v));
    if (values[root].kind == StaticValue::kConstant) continue;
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
    }
    if (value.graph_value == kNoValue) continue;
    const Value& graph_value = graph.value(value.graph_value);
    if (graph_value.is_graph_output || !program.remote_readers[value.graph_value].empty())
      request.region = -1;
    for (NodeId reader : graph.consumers(value.graph_value))
      request.last = std::max(request.last, program.position_of_node[reader]);
  }
  std::vector<int> roots;
  std::vector<BufferRequest> request_list;
  for (auto& [root, request] : requests) {
    if (request.region < 0) request.first = 0, request.last = 0;
    roots.push_back(root);
    request_list.push_back(request);
  }
  const BufferLayout layout = plan_buffers(request_list);
  std::vector<std::size_t> offset_of_root(values.size(), 0);
  for (std::size_t r = 0; r < roots.size(); ++r) offset_of_root[roots[r]] = layout.offsets[r];
  for (std::size_t v = 0; v < values.size(); ++v) {
    if (values[v].kind == StaticValue::kConstant) continue;
    const int root = root_of(static_cast<int>(v));
    values[v].offset = values[root].kind == StaticValue::kConstant ? 0 : offset_of_root[root];
  }

  // Steps in worker order, channels per value read by another worker.
  std::vector<int> step_of_node(graph.node_capacity(), -1);
  std::vector<int> step_values;
  std::string step_table;
  int step_count = 0;
  for (int w = 0; w < program.workers; ++w) {
    for (NodeId id : program.order[w]) {
      const Node& node = graph.node(id);
      const int inputs_begin = static_cast<int>(step_values.size());
      for (ValueId input : node.inputs)
        step_values.push_back(input == kNoValue ? -1 : index_of[input]);
      const int outputs_begin = static_cast<int>(step_values.size());
      for (int v : outputs_of[id]) step_values.push_back(v);
      std::string first_output;
      for (ValueId output : node.outputs) {
        if (output != kNoValue) {
          first_output = graph.value(output).name;
          break;
        }
      }
      step_table += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}}},\n",
                                cpp_string_literal(graph.describe(id)),
                                cpp_string_literal(first_output), w, inputs_begin, outputs_begin,
                                outputs_begin, static_cast<int>(step_values.size()));
      step_of_node[id] = step_count++;
    }
  }
  std::vector<int> channel_of(graph.value_capacity(), -1);
  int channel_count = 0;
  for (NodeId id : graph.topological_order()) {
    for (ValueId output : graph.node(id).outputs) {
      if (output != kNoValue && !program.remote_readers[output].empty())
        channel_of[output] = channel_count++;
    }
  }

  // Worker sources.
  std::string worker_declarations;
  std::string worker_files;
  std::string worker_pointers;
  for (int w = 0; w < program.workers; ++w) {
    std::string body;
    std::vector<bool> received(channel_count, false);
    int sends = 0, receives = 0;
    for (NodeId id : program.order[w]) {
      const Node& node = graph.node(id);
      for (ValueId input : node.inputs) {
        if (input == kNoValue || channel_of[input] < 0 || received[channel_of[input]]) continue;
        received[channel_of[input]] = true;
        ++receives;
        body += fmt::format("  p.receive({});  // {} {} from worker {}\n", channel_of[input],
                            graph.value(input).name, type_text(values[index_of[input]]),
                            program.worker_of_node[graph.value(input).producer]);
      }
      std::vector<std::string> inputs;
      for (ValueId input : node.inputs) {
        inputs.push_back(input == kNoValue ? "_" : values[index_of[input]].name);
      }
      std::vector<std::string> outputs;
      for (int v : outputs_of[id]) {
        const ProgramValue& value = values[v];
        outputs.push_back(fmt::format("{} {} {}", value.name, type_text(value),
                                      value.alias_of >= 0 ? "view of " + values[value.alias_of].name
                                                          : fmt::format("arena+{}", value.offset)));
      }
      body += fmt::format("  p.step({});  // {}: {} -> {}\n", step_of_node[id], graph.describe(id),
                          fmt::join(inputs, ", "), fmt::join(outputs, "; "));
      for (ValueId output : node.outputs) {
        if (output == kNoValue || channel_of[output] < 0) continue;
        ++sends;
        std::vector<std::string> readers;
        for (int reader : program.remote_readers[output]) readers.push_back(std::to_string(reader));
        body += fmt::format("  p.send({});  // {} to worker(s) {}\n", channel_of[output],
                            graph.value(output).name, fmt::join(readers, ", "));
      }
    }
    const std::string function = fmt::format("worker_{}", w);
    worker_declarations += fmt::format("void {}(cleave::StaticProgram& p);\n", function);
    worker_pointers += fmt::format("{}, ", function);
    worker_files += fmt::format(" worker_{}.cc", w);
    out.add(fmt::format("{}worker_{}.cc", options.source_folder, w),
            fmt::format("// Worker {} of {}: {} steps in the plan's order, {} value(s) received, "
                        "{} sent.\n#include \"program.h\"\n\nnamespace {} {{\n\nvoid {}("
                        "cleave::StaticProgram& p) {{\n{}}}\n\n}}  // namespace {}\n",
                        w, options.model_name, program.order[w].size(), receives, sends,
                        options.code_namespace, function, body, options.code_namespace));
  }

  // Tables.
  std::string dims_arrays;
  std::string value_table;
  for (std::size_t v = 0; v < values.size(); ++v) {
    const ProgramValue& value = values[v];
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
  std::vector<std::string> input_lines, output_lines, input_elements, output_elements;
  for (ValueId id : graph.inputs()) {
    const ProgramValue& value = values[index_of[id]];
    graph_inputs.push_back(index_of[id]);
    input_lines.push_back(fmt::format("     {} {}", value.name, type_text(value)));
    input_elements.push_back(std::to_string(graph.value(id).shape.element_count()));
  }
  for (ValueId id : graph.outputs()) {
    const ProgramValue& value = values[index_of[id]];
    graph_outputs.push_back(index_of[id]);
    output_lines.push_back(fmt::format("     {} {}", value.name, type_text(value)));
    output_elements.push_back(std::to_string(graph.value(id).shape.element_count()));
  }
  const auto int_list = [](const std::vector<int>& items) {
    return items.empty() ? std::string("0") : fmt::format("{}", fmt::join(items, ", "));
  };
  std::string tables = fmt::format(
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
      "    kGraphInputs, {}, kGraphOutputs, {}, {}, kWorkers}};\n\n}}  // namespace {}\n",
      options.model_name, options.code_namespace, cpp_string_literal(graph_text), dims_arrays,
      value_table, step_table, int_list(step_values), int_list(graph_inputs),
      int_list(graph_outputs), int_list(cores), worker_pointers,
      cpp_string_literal(options.model_name), cpp_string_literal(options.weights_file),
      weights.bytes.size(), cpp_string_literal(to_string(options.family)),
      options.blocked_layouts ? 1 : 0, program.workers, program.threads_per_worker, values.size(),
      step_count, channel_count, graph_inputs.size(), graph_outputs.size(), layout.arena_bytes,
      options.code_namespace);
  out.add(options.source_folder + "tables.cc", tables);
  out.add(options.source_folder + "program.h",
          fmt::format(fmt::runtime(kProgramHeader), options.code_namespace, worker_declarations));
  out.add(options.weights_file, weights.bytes);
  std::size_t unshared = 0;
  for (const BufferRequest& request : request_list) unshared += request.bytes;
  CppCodegenSummary summary;
  summary.steps = step_count;
  summary.channels = channel_count;
  summary.arena_bytes = layout.arena_bytes;
  summary.unshared_bytes = unshared;
  summary.weights_bytes = weights.bytes.size();
  if (options.tables_only) return summary;
  out.add("model.h", fmt::format(fmt::runtime(kApiHeader), options.model_name, graph_inputs.size(),
                                 graph_outputs.size(), fmt::join(input_lines, "\n"),
                                 fmt::join(output_lines, "\n")));
  out.add("model_api.cc", fmt::format(fmt::runtime(kApiSource), fmt::join(input_elements, ", "),
                                      fmt::join(output_elements, ", ")));
  out.add("main.cc", kMainSource);
  out.add("CMakeLists.txt", fmt::format(fmt::runtime(kCMakeLists), options.model_name,
                                        cmake_cleave_library(options), worker_files));
  out.add("README.md",
          fmt::format(fmt::runtime(kReadme), options.model_name, program.strategy, program.workers,
                      program.threads_per_worker, to_string(options.family),
                      options.blocked_layouts ? "" : " (plain layouts only)",
                      graph.inputs().empty() ? "x" : graph.value(graph.inputs().front()).name,
                      layout.arena_bytes, layout.requested_bytes));
  return summary;
}

}  // namespace cleave
