// StreamIt builder code: filters with their work functions, then the pipelines and split-joins.
#include "codegen/streamit_emitter.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <sstream>

#include "codegen/worker_program.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"

namespace cleave {

namespace {

// The thesis prints a filter's parameters; here the node line of a one-node model filter (its
// attributes and operands) or, for a larger model, its inputs and outputs.
std::string model_comment(const Stream& s) {
  if (!s.graph) return fmt::format("model \"{}\"", s.model);
  const Graph& g = *s.graph;
  std::vector<std::string> ins, outs;
  for (ValueId id : g.inputs()) ins.push_back(print_type(g.value(id).dtype, g.value(id).shape));
  for (ValueId id : g.outputs()) outs.push_back(print_type(g.value(id).dtype, g.value(id).shape));
  const std::string types =
      fmt::format("({}) -> ({})", fmt::join(ins, ", "), fmt::join(outs, ", "));
  if (g.node_count() != 1) {
    return fmt::format("model \"{}\", {} nodes: {}", s.model, g.node_count(), types);
  }
  // The node's line of the graph text, weights left out.
  std::istringstream text(print_graph(g, 0));
  std::string line, node_line;
  while (std::getline(text, line)) {
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == '%' && line.find(" = ") != std::string::npos)
      node_line = line.substr(first);
  }
  return fmt::format("{}\n//   {}", node_line, types);
}

std::string item_comment(const Stream& s) {
  if (!s.input_item && !s.output_item) return "";
  const auto show = [](const std::optional<ItemType>& t) {
    return t ? print_item_type(*t) : std::string("?");
  };
  return fmt::format("  items {} -> {}", show(s.input_item), show(s.output_item));
}

// The statements of a filter's work function: what it pushes, then the pop of its window.
std::vector<std::string> work_body(const Stream& s) {
  std::vector<std::string> body;
  const int64_t begin = s.args.empty() ? 0 : s.args[0];
  switch (s.op) {
    case FilterOp::kIdentity:
      if (s.pop == 1) {
        body.push_back("out.push(in.pop());");
      } else {
        body.push_back(fmt::format("for (int64_t i = 0; i < {}; ++i) out.push(in.pop());", s.pop));
      }
      return body;
    case FilterOp::kSlice:
      if (s.push == 1) {
        body.push_back(fmt::format("out.push(in.peek({}));", begin));
      } else {
        body.push_back(fmt::format("for (int64_t i = 0; i < {}; ++i) out.push(in.peek({} + i));",
                                   s.push, begin));
      }
      break;
    case FilterOp::kConcat:
      body.push_back(fmt::format("out.push(concat_items(in.window({}), {}));", s.pop, begin));
      break;
    case FilterOp::kSeparator:
      for (int64_t index : s.args) body.push_back(fmt::format("out.push(in.peek({}));", index));
      break;
    case FilterOp::kModel:
      body.push_back(
          fmt::format("out.push(run_model(\"{}\", in.window({}), {}));", s.model, s.peek, s.push));
      break;
  }
  body.push_back(fmt::format("in.pop({});", s.pop));
  return body;
}

class Printer {
 public:
  explicit Printer(StreamitCodegenSummary& summary) : summary_(summary) {}

  void filters(const Stream& s) {
    if (!s.is_filter()) {
      for (const Stream& child : s.streams) filters(child);
      return;
    }
    ++summary_.filters;
    const std::string op =
        s.op == FilterOp::kModel
            ? model_comment(s)
            : std::string(filter_op_name(s.op)) +
                  (s.args.empty() ? "" : fmt::format("({})", fmt::join(s.args, ", ")));
    out_ << fmt::format("// {}: {}{}\n", s.name, op, item_comment(s));
    out_ << fmt::format("stream_t {}() {{\n", function_name(s));
    out_ << "  work_t work = [](channel_t& in, channel_t& out) {\n";
    for (const std::string& line : work_body(s)) out_ << "    " << line << "\n";
    out_ << "  };\n";
    out_ << fmt::format(
        "  return filter<tensor_t, tensor_t>(\"{}\", /*pop=*/{}, /*peek=*/{}, /*push=*/{}, "
        "work);\n}}\n\n",
        s.name, s.pop, s.peek, s.push);
  }

  // The expression building `s`, its continuation lines indented by `indent`.
  std::string expression(const Stream& s, int indent) {
    if (s.is_filter()) return function_name(s) + "()";
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    std::string text;
    if (s.kind == StreamKind::kPipeline) {
      ++summary_.pipelines;
      text = fmt::format("pipeline<tensor_t, tensor_t>([&](auto pipe) {{  // {}\n", s.name);
      for (const Stream& child : s.streams) {
        text += fmt::format("{}  pipe->add({});\n", pad, expression(child, indent + 2));
      }
      return text + pad + "})";
    }
    ++summary_.splitjoins;
    const bool duplicate = s.split.kind == SplitKind::kDuplicate;
    text = fmt::format("{}<tensor_t, tensor_t>([&](auto sj) {{  // {}\n",
                       duplicate ? "duplicateSplitJoin" : "roundRobinSplitJoin", s.name);
    for (std::size_t b = 0; b < s.streams.size(); ++b) {
      const int64_t join = b < s.join.weights.size() ? s.join.weights[b] : 1;
      const std::string weights =
          duplicate
              ? fmt::format("{}", join)
              : fmt::format("{}, {}", b < s.split.weights.size() ? s.split.weights[b] : 1, join);
      text +=
          fmt::format("{}  sj->add({}, {});\n", pad, weights, expression(s.streams[b], indent + 2));
    }
    return text + pad + "})";
  }

  std::string text() const { return out_.str(); }

 private:
  static std::string function_name(const Stream& s) { return "filter_" + identifier_for(s.name); }

  StreamitCodegenSummary& summary_;
  std::ostringstream out_;
};

}  // namespace

std::string streamit_source(const Stream& root, StreamitCodegenSummary* summary,
                            const std::string& converted_from, const std::string& fingerprint) {
  StreamitCodegenSummary counts;
  Printer printer(counts);
  printer.filters(root);
  const std::string body = printer.expression(root, 2);
  if (summary) *summary = counts;
  const std::string name = identifier_for(root.name);
  return fmt::format(
      "// StreamIt builder code of stream \"{}\", written by `cleave codegen --lang streamit`.\n"
      "// Filters first (rates and work function each), then the program built from them.\n"
      "{}#include \"streamit.h\"\n\n"
      "namespace streamit {{\n\n"
      "{}"
      "// The program: {} filter(s), {} pipeline(s), {} split-join(s).\n"
      "stream_t stream_{}() {{\n"
      "  return {};\n"
      "}}\n\n"
      "}}  // namespace streamit\n",
      root.name,
      converted_from.empty()
          ? std::string()
          : fmt::format("// Converted from model \"{}\" ({}).\n", converted_from, fingerprint),
      printer.text(), counts.filters, counts.pipelines, counts.splitjoins, name, body);
}

std::string streamit_header() {
  return R"(// The builders that stream.cc is written against (StreamIt thesis ch. 4, C++ form).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace streamit {

// One item on a channel; a runtime gives it a tensor.
struct tensor_t {
  std::shared_ptr<void> data;
};

// The FIFO a work function reads (peek, pop) and writes (push).
class channel_t {
 public:
  tensor_t peek(int64_t i) const { return items_.at(static_cast<std::size_t>(i)); }
  tensor_t pop() {
    tensor_t item = items_.front();
    items_.pop_front();
    return item;
  }
  void pop(int64_t n) {
    for (int64_t i = 0; i < n; ++i) items_.pop_front();
  }
  std::vector<tensor_t> window(int64_t n) const {
    return {items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(n)};
  }
  void push(tensor_t item) { items_.push_back(std::move(item)); }
  void push(const std::vector<tensor_t>& items) {
    items_.insert(items_.end(), items.begin(), items.end());
  }
  std::size_t size() const { return items_.size(); }

 private:
  std::deque<tensor_t> items_;
};

using work_t = std::function<void(channel_t& in, channel_t& out)>;

enum class kind_t { filter, pipeline, duplicate_splitjoin, roundrobin_splitjoin };

struct stream_node {
  kind_t kind = kind_t::filter;
  std::string name;
  int64_t pop = 0, peek = 0, push = 0;
  work_t work;
  std::vector<std::shared_ptr<stream_node>> children;
  std::vector<int64_t> split_weights, join_weights;
};
using stream_t = std::shared_ptr<stream_node>;

// Defined by the runtime that executes the program: a model filter's work on its window of
// `peek` items, returning `push` items; the concat built-in.
std::vector<tensor_t> run_model(const char* model, const std::vector<tensor_t>& window,
                                int64_t push);
tensor_t concat_items(const std::vector<tensor_t>& items, int64_t axis);

template <class In, class Out>
stream_t filter(std::string name, int64_t pop, int64_t peek, int64_t push, work_t work) {
  auto node = std::make_shared<stream_node>();
  node->name = std::move(name);
  node->pop = pop;
  node->peek = peek;
  node->push = push;
  node->work = std::move(work);
  return node;
}

class pipeline_builder {
 public:
  explicit pipeline_builder(stream_node& node) : node_(node) {}
  void add(stream_t stream) { node_.children.push_back(std::move(stream)); }

 private:
  stream_node& node_;
};

class duplicate_builder {
 public:
  explicit duplicate_builder(stream_node& node) : node_(node) {}
  void add(int64_t join_weight, stream_t stream) {
    node_.join_weights.push_back(join_weight);
    node_.children.push_back(std::move(stream));
  }

 private:
  stream_node& node_;
};

class roundrobin_builder {
 public:
  explicit roundrobin_builder(stream_node& node) : node_(node) {}
  void add(int64_t split_weight, int64_t join_weight, stream_t stream) {
    node_.split_weights.push_back(split_weight);
    node_.join_weights.push_back(join_weight);
    node_.children.push_back(std::move(stream));
  }

 private:
  stream_node& node_;
};

template <class In, class Out, class Body>
stream_t pipeline(Body body) {
  auto node = std::make_shared<stream_node>();
  node->kind = kind_t::pipeline;
  pipeline_builder builder(*node);
  body(&builder);
  return node;
}

template <class In, class Out, class Body>
stream_t duplicateSplitJoin(Body body) {
  auto node = std::make_shared<stream_node>();
  node->kind = kind_t::duplicate_splitjoin;
  duplicate_builder builder(*node);
  body(&builder);
  return node;
}

template <class In, class Out, class Body>
stream_t roundRobinSplitJoin(Body body) {
  auto node = std::make_shared<stream_node>();
  node->kind = kind_t::roundrobin_splitjoin;
  roundrobin_builder builder(*node);
  body(&builder);
  return node;
}

}  // namespace streamit
)";
}

StreamitCodegenSummary emit_streamit(const Stream& root, const std::string& origin,
                                     AtomicFolder& out, const std::string& fingerprint) {
  StreamitCodegenSummary summary;
  out.write_file("stream.cc",
                 streamit_source(root, &summary, fingerprint.empty() ? "" : origin, fingerprint));
  if (!fingerprint.empty()) {
    for (const Stream* s : collect_filters(root)) {
      if (s->op == FilterOp::kModel && s->graph) {
        out.write_file(s->model, to_onnx(*s->graph).SerializeAsString());
      }
    }
  }
  out.write_file("streamit.h", streamit_header());
  out.write_file(
      "README.md",
      fmt::format("# Stream \"{}\" as StreamIt builder code\n\n"
                  "Written by `cleave codegen --lang streamit` from `{}`: {} filter(s), {} "
                  "pipeline(s), {} split-join(s).\n\n"
                  "- `stream.cc`: one function per filter (its pop, peek and push rates and its "
                  "work function), then `stream_{}()`, which builds the program with "
                  "`pipeline<>`, `duplicateSplitJoin<>` and `roundRobinSplitJoin<>` in the form of "
                  "the StreamIt thesis (ch. 4).\n"
                  "- `streamit.h`: the builder types. `run_model` and `concat_items` are declared "
                  "only: a runtime defines them.\n"
                  "- `program.json` (from a program file only): the program, its model paths "
                  "relative to this folder.\n"
                  "- `NAME.onnx` (from a model only): each model filter's graph, the path its "
                  "`run_model` names.\n\n"
                  "Check that it compiles:\n\n"
                  "    g++ -std=c++20 -fsyntax-only stream.cc\n\n"
                  "cleave runs the same program with `cleave stream run` and generates it as a "
                  "stand-alone C++ program from this text with `cleave codegen MODEL --stream "
                  "DIR/stream.cc --lang cpp` (the reader takes the subset written here: edit "
                  "rates, weights, names and the tree, not the work functions' form).\n",
                  root.name, origin, summary.filters, summary.pipelines, summary.splitjoins,
                  identifier_for(root.name)));
  return summary;
}

}  // namespace cleave
