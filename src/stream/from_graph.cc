// Conversion of a graph to a stream program through the instruction form.
#include "stream/from_graph.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <map>
#include <set>

#include "analysis/flops.h"

namespace cleave {

namespace {

// How many filters a conversion may make, replicated ones included: an unrolled GRU of a few
// steps makes thousands, DenseNet-121 ran out of memory (20 GB) on the way to many more.
constexpr int64_t kMaxConversionFilters = int64_t{1} << 16;

class Converter {
 public:
  Converter(const Graph& graph, StreamConversion& out, bool by_reference)
      : graph_(graph), out_(out), p_(out.instructions), by_reference_(by_reference) {
    const int n = static_cast<int>(p_.instructions.size());
    root_ = n;
    sink_ = n + 1;
    preds_.resize(n + 2);
    for (const Instruction& in : p_.instructions) {
      if (!in.live) continue;
      if (in.op == "placeholder") {
        preds_[in.result] = {root_};
      } else {
        preds_[in.result] = std::vector<int>(in.args.begin(), in.args.end());
        if (in.args.empty()) preds_[in.result] = {root_};  // e.g. a node reading only constants
      }
    }
    preds_[sink_] = p_.outputs;
    compute_dominators();
  }

  Stream convert(const std::string& name) {
    Stream top;
    top.kind = StreamKind::kPipeline;
    top.name = name;
    build(root_, sink_, top);
    if (top.streams.empty()) {
      append_filter(top, identity_filter());
    }
    if (by_reference_) drop_unread_publications(top);
    return top;
  }

 private:
  // Instructions are topologically numbered; the root is before all and the sink after all.
  int order(int v) const { return v == root_ ? -1 : v; }

  void compute_dominators() {
    idom_.assign(sink_ + 1, -2);
    depth_.assign(sink_ + 1, 0);
    idom_[root_] = root_;
    std::vector<int> nodes;
    for (const Instruction& in : p_.instructions) {
      if (in.live) nodes.push_back(in.result);
    }
    nodes.push_back(sink_);
    for (int v : nodes) {
      int d = -2;
      for (int u : preds_[v]) d = d == -2 ? u : intersect(d, u);
      idom_[v] = d;
      depth_[v] = depth_[d] + 1;
    }
  }

  int intersect(int a, int b) const {
    while (a != b) {
      if (depth_[a] >= depth_[b]) {
        a = idom_[a];
      } else {
        b = idom_[b];
      }
    }
    return a;
  }

  std::string fresh(const std::string& base) {
    const int count = used_[base]++;
    return count == 0 ? base : fmt::format("{}_{}", base, count);
  }

  Stream identity_filter() {
    Stream s;
    s.name = fresh("pass");
    s.op = FilterOp::kIdentity;
    s.pop = s.peek = s.push = 1;
    return s;
  }

  // Values published but read nowhere (every place that needed them was its own) stay plain.
  void drop_unread_publications(Stream& s) const {
    if (s.is_filter()) {
      if (!s.publishes.empty() && !read_.count(s.publishes)) s.publishes.clear();
      return;
    }
    for (Stream& child : s.streams) drop_unread_publications(child);
  }

  // Items of one iteration on the channel that carries `v`'s value (the root: the inputs).
  int64_t items_of(int v) const {
    return v == root_ ? static_cast<int64_t>(graph_.inputs().size()) : output_count(v);
  }

  // By reference: where `v`'s filter already exists, a reader that turns the items of
  // `from` into v's value stands in for the chain that would repeat it.
  bool append_reader(int from, int v, Stream& pipeline) {
    if (!by_reference_ || v == root_ || v == sink_) return false;
    const Instruction& in = p_.instructions[v];
    if (in.node < 0 || in.op == "getitem" || !emitted_.count(v)) return false;
    Stream s;
    s.name = fresh(fmt::format("v{}_ref", v));
    s.op = FilterOp::kIdentity;
    s.pop = s.peek = items_of(from);
    s.push = output_count(v);
    s.reads = fmt::format("v{}", v);
    read_.insert(s.reads);
    ++out_.reference_readers;
    out_.referenced_flops += node_flops(graph_, in.node).value_or(0);
    append_filter(pipeline, std::move(s));
    return true;
  }

  static void append_filter(Stream& pipeline, Stream filter) {
    pipeline.streams.push_back(std::move(filter));
  }

  int64_t output_count(int v) const {
    const Instruction& in = p_.instructions[v];
    return in.node >= 0 && in.value == kNoValue
               ? static_cast<int64_t>(graph_.node(in.node).outputs.size())
               : 1;
  }

  // A one-node graph running instruction `v`: one input per argument slot, its outputs.
  std::shared_ptr<const Graph> node_graph(int v) const {
    const Instruction& in = p_.instructions[v];
    const Node& node = graph_.node(in.node);
    auto g = std::make_shared<Graph>();
    g->name = fmt::format("v{}", v);
    g->opset_imports = graph_.opset_imports;
    g->ir_version = graph_.ir_version;
    std::vector<ValueId> inputs;
    int slot = 0;
    for (ValueId id : node.inputs) {
      if (id == kNoValue) {
        inputs.push_back(kNoValue);
        continue;
      }
      const Value& value = graph_.value(id);
      if (value.initializer) {
        const std::optional<ValueId> existing = g->find_value(value.name);
        inputs.push_back(existing ? *existing : g->add_initializer(value.name, *value.initializer));
        continue;
      }
      inputs.push_back(g->add_input(fmt::format("in{}", slot++), value.dtype, value.shape));
    }
    std::vector<ValueId> outputs;
    for (ValueId id : node.outputs) {
      const Value& value = graph_.value(id);
      outputs.push_back(
          g->add_value(value.name.empty() ? fmt::format("out{}", outputs.size()) : value.name,
                       value.dtype, value.shape));
    }
    g->add_node(node.op_type, inputs, outputs, node.attributes, node.name, node.domain);
    for (ValueId id : outputs) g->mark_output(id);
    return g;
  }

  Stream instruction_filter(int v) {
    const Instruction& in = p_.instructions[v];
    Stream s;
    if (in.op == "placeholder") {
      // Picks this input's item out of the round robin of program inputs.
      const auto inputs = static_cast<int64_t>(graph_.inputs().size());
      s.name = fresh(fmt::format("v{}_input{}", v, in.input_index));
      s.op = FilterOp::kSeparator;
      s.pop = s.peek = inputs;
      s.push = 1;
      s.args = {in.input_index};
      return s;
    }
    if (in.op == "getitem") {
      s.name = fresh(fmt::format("v{}_getitem{}", v, in.params[0]));
      s.op = FilterOp::kSeparator;
      s.pop = s.peek = output_count(in.args[0]);
      s.push = 1;
      s.args = {in.params[0]};
      return s;
    }
    const std::string base = fmt::format("v{}_{}", v, graph_.node(in.node).op_type);
    const bool copy = used_.count(base) > 0;
    s.name = fresh(base);
    s.op = FilterOp::kModel;
    s.model = s.name + ".onnx";
    s.pop = s.peek = std::max<int64_t>(1, static_cast<int64_t>(in.args.size()));
    s.push = output_count(v);
    s.graph = node_graph(v);
    if (by_reference_) s.publishes = fmt::format("v{}", v);
    emitted_.insert(v);
    const int64_t flops = node_flops(graph_, in.node).value_or(0);
    ++out_.filters;
    // Replication grows with every split-join a node is shared by, exponentially in a chain.
    if (out_.filters > kMaxConversionFilters) {
      throw Error(fmt::format(
          "stream conversion: the graph is not series-parallel: nodes its split-joins share "
          "are repeated in each, which takes more than {} filters for its {} nodes; `cleave "
          "stream run --no-replicate` passes such values by reference instead",
          kMaxConversionFilters, out_.live_instructions));
    }
    if (copy) {
      ++out_.replicated_filters;
      out_.replicated_flops += flops;
    }
    return s;
  }

  // Appends to `pipeline` what turns the items of `from` (which dominates `to`) into `to`.
  void build(int from, int to, Stream& pipeline) {
    if (from == to) return;
    if (append_reader(from, to, pipeline)) return;
    const bool is_sink = to == sink_;
    const std::vector<int>& args = is_sink ? p_.outputs : p_.instructions[to].args;
    const bool placeholder = !is_sink && p_.instructions[to].op == "placeholder";
    if (placeholder) {
      // The root carries the program input; one input needs no picking.
      if (graph_.inputs().size() > 1) append_filter(pipeline, instruction_filter(to));
      return;
    }
    if (to == root_ || (args.empty() && !is_sink)) {
      throw Error(
          fmt::format("stream conversion: {} reads no value of the graph (only "
                      "constants); fold constants first",
                      to == root_ ? "the root" : graph_.describe(p_.instructions[to].node)));
    }
    if (args.size() <= 1) {
      build(from, args[0], pipeline);
      if (!is_sink) append_filter(pipeline, instruction_filter(to));
      return;
    }
    const int d = idom_[to];
    build(from, d, pipeline);
    Stream sj;
    sj.kind = StreamKind::kSplitJoin;
    sj.name = fresh(fmt::format("sj_v{}", is_sink ? -1 : to));
    if (is_sink) sj.name = fresh("outputs");
    for (int a : args) {
      Stream branch;
      branch.kind = StreamKind::kPipeline;
      branch.name = fresh(fmt::format("{}_branch", sj.name));
      build(d, a, branch);
      if (branch.streams.empty()) append_filter(branch, identity_filter());
      sj.streams.push_back(std::move(branch));
    }
    sj.join.weights.assign(args.size(), 1);
    sj.split.kind = SplitKind::kDuplicate;
    make_round_robin_if_selecting(sj, d);
    for (Stream& branch : sj.streams) {
      if (branch.streams.size() == 1) {
        // Moved out first: assigning a child into its parent would free it mid-assignment.
        Stream only = std::move(branch.streams[0]);
        branch = std::move(only);
      }
    }
    pipeline.streams.push_back(std::move(sj));
    if (!is_sink) append_filter(pipeline, instruction_filter(to));
  }

  // When branch j starts by picking item j of what the splitter sees (input j at the root,
  // output j of a tuple), a round-robin splitter hands each branch its item directly.
  void make_round_robin_if_selecting(Stream& sj, int d) {
    int64_t items = 0;
    if (d == root_) {
      items = static_cast<int64_t>(graph_.inputs().size());
    } else if (d < root_ && p_.instructions[d].node >= 0) {
      items = output_count(d);
    }
    if (items <= 1 || static_cast<int64_t>(sj.streams.size()) != items) return;
    for (std::size_t j = 0; j < sj.streams.size(); ++j) {
      const Stream& branch = sj.streams[j];
      if (branch.streams.empty()) return;
      const Stream& first = branch.streams[0];
      if (!first.is_filter() || first.op != FilterOp::kSeparator || first.pop != items ||
          first.args != std::vector<int64_t>{static_cast<int64_t>(j)}) {
        return;
      }
    }
    sj.split.kind = SplitKind::kRoundRobin;
    sj.split.weights.assign(sj.streams.size(), 1);
    for (Stream& branch : sj.streams) {
      branch.streams.erase(branch.streams.begin());
      if (branch.streams.empty()) append_filter(branch, identity_filter());
    }
  }

  const Graph& graph_;
  StreamConversion& out_;
  const InstructionProgram& p_;
  int root_ = 0;
  int sink_ = 0;
  std::vector<std::vector<int>> preds_;
  std::vector<int> idom_;
  std::vector<int> depth_;
  std::map<std::string, int> used_;
  bool by_reference_ = false;
  std::set<int> emitted_;       // instructions that have their filter
  std::set<std::string> read_;  // references some reader reads
};

}  // namespace

StreamConversion graph_to_stream(const Graph& graph, const std::string& name) {
  return graph_to_stream(graph, name, StreamConversionOptions{});
}

StreamConversion graph_to_stream(const Graph& graph, const std::string& name,
                                 const StreamConversionOptions& options) {
  StreamConversion out;
  out.instructions = to_instructions(graph);
  for (const Instruction& in : out.instructions.instructions) {
    if (in.live && in.node >= 0 && in.op != "getitem") {
      ++out.live_instructions;
      out.total_flops += node_flops(graph, in.node).value_or(0);
    }
  }
  Converter converter(graph, out, options.by_reference);
  out.root = converter.convert(name);
  return out;
}

}  // namespace cleave
