// C++ generation: kernel specs found by one preparing run, a static arena, worker sources.
#include "codegen/cpp_emitter.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <filesystem>

#include "codegen/cpp_templates.h"
#include "codegen/program_layout.h"
#include "codegen_runtime/static_program.h"
#include "ir/text.h"

namespace cleave {

namespace {

using namespace cpp_templates;

// The C API's per-output tables (model_api.cc), each entry as C++ source text.
struct OutputTables {
  std::vector<std::string> elements, types, element_bytes, names, ranks, dims;
};

void add_output(const ProgramValue& value, OutputTables& tables) {
  const bool run_time = value.kind == StaticValue::kRunTime;
  tables.elements.push_back(run_time ? "0" : std::to_string(element_count(value)));
  tables.types.push_back(std::to_string(static_cast<int>(value.dtype)));
  tables.element_bytes.push_back(std::to_string(element_size(value.dtype)));
  tables.names.push_back(cpp_string_literal(value.name));
  // A run-time shape is read from the last run's output instead.
  tables.ranks.push_back(run_time ? "0" : std::to_string(value.dims.size()));
  if (run_time) return;
  for (int64_t dim : value.dims) tables.dims.push_back(std::to_string(dim));
}

}  // namespace

std::string cmake_cleave_library(const CppCodegenOptions& options) {
  return fmt::format(fmt::runtime(kCleaveLibrary), options.cleave_root, options.cleave_build);
}

void require_cleave_root(const std::string& root) {
  const std::filesystem::path header =
      std::filesystem::path(root) / "src/codegen_runtime/static_program.h";
  std::error_code error;
  if (!std::filesystem::is_regular_file(header, error)) {
    throw Error(
        fmt::format("--cleave-root {}: not cleave's source folder (expected a folder holding {}{})",
                    root, "src/codegen_runtime/static_program.h",
                    std::filesystem::exists(root, error) ? "" : "; the path does not exist"));
  }
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
  const std::string again = print_graph(parsed, INT_MAX);
  if (again != text) {
    // The first line that differs, so that the form the text cannot carry is named.
    std::size_t line_start = 0;
    std::size_t at = 0;
    while (at < text.size() && at < again.size() && text[at] == again[at]) {
      if (text[at] == '\n') line_start = at + 1;
      ++at;
    }
    const auto line_of = [&](const std::string& s) {
      const std::size_t end = s.find('\n', line_start);
      return s.substr(line_start, std::min<std::size_t>(end, line_start + 300) - line_start);
    };
    throw Error(
        fmt::format("the optimized graph does not read back the same from its text form, which the "
                    "generated program embeds: line '{}' reads back as '{}'",
                    line_of(text), line_of(again)));
  }
  return text;
}

CppCodegenSummary emit_cpp(const Graph& graph, const WorkerProgram& program,
                           const CppCodegenOptions& options, AtomicFolder& out) {
  const ProgramLayout layout = lay_out_program(graph, program, options, !options.tables_only);
  const std::vector<ProgramValue>& values = layout.values;
  const std::vector<int>& index_of = layout.index_of;

  // Channels: one ready flag per value read by another worker.
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
      body += fmt::format("  p.step({});  // {}\n", layout.step_of_node[id],
                          step_comment(graph, layout, id));
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
    out.write_file(
        fmt::format("{}worker_{}.cc", options.source_folder, w),
        fmt::format("// Worker {} of {}: {} steps in the plan's order, {} value(s) received, "
                    "{} sent.\n#include \"program.h\"\n\nnamespace {} {{\n\nvoid {}("
                    "cleave::StaticProgram& p) {{\n{}}}\n\n}}  // namespace {}\n",
                    w, options.model_name, program.order[w].size(), receives, sends,
                    options.code_namespace, function, body, options.code_namespace));
  }

  out.write_file(options.source_folder + "tables.cc",
                 tables_source(graph, program, options, layout, channel_count, worker_pointers));
  out.write_file(
      options.source_folder + "program.h",
      fmt::format(fmt::runtime(kProgramHeader), options.code_namespace, worker_declarations));
  out.write_file(options.weights_file, layout.weights.bytes);
  CppCodegenSummary summary;
  summary.steps = layout.step_count;
  summary.channels = channel_count;
  summary.arena_bytes = layout.arena.arena_bytes;
  summary.unshared_bytes = layout.unshared_bytes;
  summary.weights_bytes = layout.weights.bytes.size();
  summary.run_time_steps = layout.run_time_steps;
  summary.concat_inputs_in_place = layout.concat_inputs_in_place;
  if (options.tables_only) return summary;
  std::vector<std::string> input_lines, output_lines, input_elements;
  for (ValueId id : graph.inputs()) {
    input_lines.push_back(
        fmt::format("     {} {}", values[index_of[id]].name, type_text(values[index_of[id]])));
    input_elements.push_back(std::to_string(element_count(values[index_of[id]])));
  }
  OutputTables outputs;
  for (ValueId id : graph.outputs()) {
    const ProgramValue& value = values[index_of[id]];
    output_lines.push_back(fmt::format("     {} {}", value.name, type_text(value)));
    add_output(value, outputs);
  }
  outputs.dims.push_back("0");
  out.write_file("model.h",
                 fmt::format(fmt::runtime(kApiHeader), options.model_name, graph.inputs().size(),
                             graph.outputs().size(), fmt::join(input_lines, "\n"),
                             fmt::join(output_lines, "\n")));
  out.write_file("model_api.cc",
                 fmt::format(fmt::runtime(kApiSource), fmt::join(input_elements, ", "),
                             fmt::join(outputs.elements, ", "), fmt::join(outputs.types, ", "),
                             fmt::join(outputs.element_bytes, ", "), fmt::join(outputs.names, ", "),
                             fmt::join(outputs.ranks, ", "), fmt::join(outputs.dims, ", ")));
  out.write_file("main.cc", kMainSource);
  out.write_file("CMakeLists.txt", fmt::format(fmt::runtime(kCMakeLists), options.model_name,
                                               cmake_cleave_library(options), worker_files));
  out.write_file(
      "README.md",
      fmt::format(fmt::runtime(kReadme), options.model_name, program.strategy, program.workers,
                  program.threads_per_worker, to_string(options.family),
                  options.blocked_layouts ? "" : " (plain layouts only)",
                  graph.inputs().empty() ? "x" : graph.value(graph.inputs().front()).name,
                  layout.arena.arena_bytes, layout.arena.requested_bytes,
                  layout.run_time_steps == 0
                      ? ""
                      : fmt::format(fmt::runtime(kRunTimeReadme), layout.run_time_steps)));
  return summary;
}

}  // namespace cleave
