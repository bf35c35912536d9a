// DOT output of a graph and rendering through the Graphviz `dot` program.
#include "analysis/graph_dot.h"

#include <fmt/core.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/text.h"
#include "support/atomic_output.h"

extern char** environ;

namespace cleave {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

constexpr const char* kHighlight = "color=red, fontcolor=red, penwidth=2.5, style=bold";

// A fresh name in the temporary folder for `dot`'s input, output and messages: the rendered
// bytes reach `path` through write_file_atomically, which writes into a device such as
// /dev/null instead of renaming a file over it.
std::string temporary_path(const std::string& suffix) {
  static int counter = 0;
  return (std::filesystem::temp_directory_path() /
          fmt::format("cleave-dot-{}-{}{}", static_cast<long>(getpid()), counter++, suffix))
      .string();
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

std::string graph_to_dot(const Graph& graph, const std::vector<NodeId>& highlighted_path) {
  std::set<NodeId> on_path(highlighted_path.begin(), highlighted_path.end());
  std::set<std::pair<NodeId, NodeId>> path_edges;
  for (std::size_t i = 1; i < highlighted_path.size(); ++i) {
    path_edges.insert({highlighted_path[i - 1], highlighted_path[i]});
  }

  std::string out = fmt::format("digraph \"{}\" {{\n", escape(graph.name));
  out += "  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [color=gray40];\n";
  for (ValueId id : graph.inputs()) {
    const Value& value = graph.value(id);
    out += fmt::format("  v{} [shape=ellipse, label=\"{}\\n{}\"];\n", id, escape(value.name),
                       escape(print_type(value.dtype, value.shape)));
  }
  for (ValueId id : graph.outputs()) {
    const Value& value = graph.value(id);
    out += fmt::format("  o{} [shape=ellipse, label=\"{}\\n{}\"];\n", id, escape(value.name),
                       escape(print_type(value.dtype, value.shape)));
  }
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    std::string type = node.outputs.empty() ? std::string()
                                            : print_type(graph.value(node.outputs[0]).dtype,
                                                         graph.value(node.outputs[0]).shape);
    out += fmt::format("  n{} [label=\"{}\\n{}\\n{}\"{}];\n", id, escape(node.op_type),
                       escape(node.name.empty() ? graph.describe(id) : node.name), escape(type),
                       on_path.count(id) ? std::string(", ") + kHighlight : "");
  }
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    std::set<ValueId> drawn_inputs;
    for (ValueId input : node.inputs) {
      if (input == kNoValue || !graph.value(input).is_graph_input) continue;
      if (drawn_inputs.insert(input).second) out += fmt::format("  v{} -> n{};\n", input, id);
    }
    for (NodeId pred : graph.predecessors(id)) {
      out += fmt::format("  n{} -> n{}{};\n", pred, id,
                         path_edges.count({pred, id}) ? std::string(" [") + kHighlight + "]" : "");
    }
  }
  for (ValueId id : graph.outputs()) {
    const Value& value = graph.value(id);
    if (value.producer >= 0) out += fmt::format("  n{} -> o{};\n", value.producer, id);
    if (value.is_graph_input) out += fmt::format("  v{} -> o{};\n", id, id);
  }
  out += "}\n";
  return out;
}

void render_dot(const std::string& dot_text, const std::string& format, const std::string& path) {
  const std::string dot_file = temporary_path(".dot");
  const std::string rendered = temporary_path("." + format);
  const std::string errors = temporary_path(".err");
  auto cleanup = [&] {
    std::remove(dot_file.c_str());
    std::remove(rendered.c_str());
    std::remove(errors.c_str());
  };
  {
    std::ofstream out(dot_file, std::ios::binary | std::ios::trunc);
    out << dot_text;
    out.close();
    if (!out) {
      cleanup();
      throw Error(fmt::format("{}: cannot write a temporary file for Graphviz", path));
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string format_flag = "-T" + format;
  std::vector<std::string> args = {"dot", format_flag, "-o", rendered, dot_file};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  const int spawn_error = posix_spawnp(&child, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    cleanup();
    throw Error(
        fmt::format("{}: cannot run Graphviz `dot` ({}); install graphviz, or write "
                    "--dot and render it elsewhere",
                    path, std::strerror(spawn_error)));
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) break;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string message = read_whole_file(errors);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    cleanup();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 127) {
      throw Error(
          fmt::format("{}: Graphviz `dot` is not installed; install graphviz, or write "
                      "--dot and render it elsewhere",
                      path));
    }
    throw Error(fmt::format("{}: `dot -T{}` failed (exit {}): {}", path, format, code, message));
  }
  try {
    write_file_atomically(path, read_whole_file(rendered));
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
}

}  // namespace cleave
