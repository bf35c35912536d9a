// Printing stream programs as StreamIt-like source.
#include "stream/stream_text.h"

#include <fmt/core.h>
#include <fmt/format.h>

namespace cleave {

namespace {

void print(const Stream& s, int depth, std::string& out) {
  const std::string pad(2 * depth, ' ');
  if (s.is_filter()) {
    out +=
        fmt::format("{}filter {}(pop {}, peek {}, push {}) ", pad, s.name, s.pop, s.peek, s.push);
    if (s.op == FilterOp::kModel) {
      out += fmt::format("model \"{}\"", s.model.empty() ? "<graph>" : s.model);
    } else {
      out += filter_op_name(s.op);
      if (!s.args.empty()) out += fmt::format("({})", fmt::join(s.args, ", "));
    }
    if (!s.reads.empty()) out += fmt::format(" reads &{}", s.reads);
    if (!s.publishes.empty()) out += fmt::format(" publishes &{}", s.publishes);
    if (s.input_item || s.output_item) {
      out += fmt::format(" {} -> {}", s.input_item ? print_item_type(*s.input_item) : "?",
                         s.output_item ? print_item_type(*s.output_item) : "?");
    }
    out += ";\n";
    return;
  }
  out += fmt::format("{}{} {} {{\n", pad,
                     s.kind == StreamKind::kPipeline ? "pipeline" : "splitjoin", s.name);
  if (s.kind == StreamKind::kSplitJoin) {
    if (s.split.kind == SplitKind::kDuplicate) {
      out += fmt::format("{}  split duplicate;\n", pad);
    } else {
      out += fmt::format("{}  split roundrobin({});\n", pad, fmt::join(s.split.weights, ", "));
    }
  }
  for (const Stream& child : s.streams) print(child, depth + 1, out);
  if (s.kind == StreamKind::kSplitJoin) {
    out += fmt::format("{}  join roundrobin({});\n", pad, fmt::join(s.join.weights, ", "));
  }
  out += pad + "}\n";
}

}  // namespace

std::string print_stream(const Stream& root) {
  std::string out;
  print(root, 0, out);
  return out;
}

}  // namespace cleave
