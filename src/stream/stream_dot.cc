// Drawing stream programs as Graphviz clusters.
#include "stream/stream_dot.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "stream/schedule.h"

namespace cleave {

namespace {

void clusters(const Stream& s, const StreamGraph& g, std::string& out, int depth) {
  if (s.is_filter()) {
    for (std::size_t v = 0; v < g.nodes.size(); ++v) {
      if (g.nodes[v].stream == &s) {
        out += fmt::format("{}n{} [shape=box, label=\"{}\\npop {} peek {} push {}\\n{}\"];\n",
                           std::string(depth * 2, ' '), v, s.name, s.pop, s.peek, s.push,
                           s.op == FilterOp::kModel ? s.model : filter_op_name(s.op));
      }
    }
    return;
  }
  const std::string pad(depth * 2, ' ');
  out +=
      fmt::format("{}subgraph \"cluster_{}\" {{\n{}  label=\"{} {}\"; style=dashed;\n", pad, s.name,
                  pad, s.kind == StreamKind::kPipeline ? "pipeline" : "splitjoin", s.name);
  for (std::size_t v = 0; v < g.nodes.size(); ++v) {
    if (g.nodes[v].stream == &s && g.nodes[v].kind != StreamNodeKind::kFilter) {
      const bool split = g.nodes[v].kind == StreamNodeKind::kSplitter;
      const std::string label =
          split ? (s.split.kind == SplitKind::kDuplicate
                       ? std::string("duplicate")
                       : fmt::format("roundrobin({})", fmt::join(s.split.weights, ",")))
                : fmt::format("roundrobin({})", fmt::join(s.join.weights, ","));
      out += fmt::format("{}  n{} [shape=diamond, label=\"{}\"];\n", pad, v, label);
    }
  }
  for (const Stream& child : s.streams) clusters(child, g, out, depth + 1);
  out += pad + "}\n";
}

}  // namespace

std::string stream_to_dot(const Stream& root) {
  const StreamGraph g = flatten_stream(root);
  std::string out =
      "digraph stream {\n  rankdir=TB;\n  input [shape=ellipse];\n"
      "  output [shape=ellipse];\n";
  clusters(root, g, out, 1);
  for (const StreamChannel& c : g.channels) {
    out += fmt::format("  {} -> {};\n", c.from < 0 ? "input" : fmt::format("n{}", c.from),
                       c.to < 0 ? "output" : fmt::format("n{}", c.to));
  }
  out += "}\n";
  return out;
}

}  // namespace cleave
