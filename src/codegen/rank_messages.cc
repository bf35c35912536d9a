// The messages of a generated rank program: which values cross ranks for which samples, and
// each rank's MPI calls around its steps.
#include "codegen/rank_messages.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <utility>

namespace cleave {

namespace {

struct Hop {
  ValueId value = kNoValue;
  int from = 0;
  int to = 0;
};

// One sample's messages, in the order values come to exist, its nodes run by `worker_of`;
// with `rank_zero_io`, rank 0 hands out the inputs and gathers the outputs.
std::vector<Hop> hops_of_sample(const Graph& graph, const std::vector<int>& worker_of,
                                bool rank_zero_io) {
  std::vector<Hop> hops;
  const auto add = [&](ValueId value, int from, int to) {
    for (const Hop& hop : hops) {
      if (hop.value == value && hop.to == to) return;
    }
    hops.push_back({value, from, to});
  };
  const auto readers_of = [&](ValueId value, int except) {
    std::vector<int> readers;
    for (NodeId reader : graph.consumers(value)) {
      if (worker_of[reader] != except) readers.push_back(worker_of[reader]);
    }
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    return readers;
  };
  for (ValueId input : rank_zero_io ? graph.inputs() : std::vector<ValueId>{}) {
    for (int to : readers_of(input, 0)) add(input, 0, to);
  }
  for (NodeId id : graph.topological_order()) {
    const int from = worker_of[id];
    for (ValueId output : graph.node(id).outputs) {
      if (output == kNoValue) continue;
      for (int to : readers_of(output, from)) add(output, from, to);
      if (rank_zero_io && graph.value(output).is_graph_output && from != 0) add(output, from, 0);
    }
  }
  return hops;
}

// Writes one rank's function body for a program of one sample (see rank_body): every message
// of a channel is its one buffer's, tagged with the channel.
class RankBodyWriter {
 public:
  RankBodyWriter(const Graph& graph, const WorkerProgram& program, const ProgramLayout& layout,
                 const std::vector<MessageChannel>& channels, int r)
      : graph_(graph), program_(program), layout_(layout), channels_(channels), r_(r) {
    for (const MessageChannel& channel : channels) {
      if (channel.to == r) ++counts_.received;
      if (channel.from == r) ++counts_.sent;
    }
  }

  std::string write(RankMessageCounts& counts) {
    counts = counts_;
    if (counts_.received + counts_.sent > 0) body_ += "  MPI_Comm comm = p.comm();\n";
    post_receives();
    if (r_ == 0) {
      for (ValueId input : graph_.inputs()) send_all(input);
    }
    for (NodeId id : program_.order[r_]) {
      const Node& node = graph_.node(id);
      for (ValueId input : node.inputs) {
        if (input != kNoValue) wait(input);
      }
      body_ += fmt::format("  p.step({});  // {}\n", layout_.step_of_node[id],
                           step_comment(graph_, layout_, id));
      for (ValueId output : node.outputs) {
        if (output != kNoValue) send_all(output);
      }
    }
    if (r_ == 0) gather_outputs();
    complete_sends();
    return body_;
  }

 private:
  void message_call(const char* function, int c, int peer, const std::string& size,
                    const std::string& comment) {
    body_ += fmt::format(
        "  p.check({0}(p.message({1}), {2}, MPI_BYTE, /*{3}=*/{4}, /*tag=*/{1}, comm, "
        "p.request({1})), {1}, \"{0}\");  // {5}\n",
        function, c, size, std::string(function) == "MPI_Isend" ? "to" : "from", peer, comment);
  }

  void post_receives() {
    bool any = false;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.to != r_) continue;
      if (!any) body_ += "  // Every receive of the run, posted at its start.\n";
      any = true;
      const ProgramValue& value = layout_.values[layout_.index_of[channel.value]];
      message_call("MPI_Irecv", c, channel.from, fmt::format("p.capacity({})", c),
                   fmt::format("{} {} from rank {}", value.name, type_text(value), channel.from));
    }
  }

  void send_all(ValueId value) {
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.value != value || channel.from != r_) continue;
      message_call("MPI_Isend", c, channel.to, fmt::format("p.pack({})", c),
                   fmt::format("{} to rank {}", graph_.value(value).name, channel.to));
    }
  }

  void wait(ValueId value) {
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      if (channels_[c].value != value || channels_[c].to != r_ || !waited_.insert(c).second)
        continue;
      body_ += fmt::format("  p.wait_receive({});  // {}\n", c, graph_.value(value).name);
    }
  }

  void gather_outputs() {
    const std::size_t before = body_.size();
    const std::string heading = "  // The outputs other ranks computed.\n";
    body_ += heading;
    for (ValueId output : graph_.outputs()) wait(output);
    if (body_.size() == before + heading.size()) body_.resize(before);
  }

  void complete_sends() {
    bool any = false;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      if (channels_[c].from != r_) continue;
      if (!any) body_ += "  // Sends complete before the next run reuses their buffers.\n";
      any = true;
      body_ += fmt::format("  p.wait_send({});  // {}\n", c, graph_.value(channels_[c].value).name);
    }
  }

  const Graph& graph_;
  const WorkerProgram& program_;
  const ProgramLayout& layout_;
  const std::vector<MessageChannel>& channels_;
  const int r_;
  std::string body_;
  RankMessageCounts counts_;
  std::set<int> waited_;
};

// Writes one rank's function body for a stream of samples (see rank_body): a loop over the
// rank's samples whose body is one sample's steps and messages, with each message's buffer and
// tag computed from the sample, so that the source does not grow with the samples.
class RankLoopWriter {
 public:
  RankLoopWriter(const Graph& graph, const WorkerProgram& program, const ProgramLayout& layout,
                 const std::vector<MessageChannel>& channels, int r)
      : graph_(graph), layout_(layout), channels_(channels), r_(r) {
    mine_ = worker_samples(graph, program, r, nodes_);
    for (int c = 0; c < static_cast<int>(channels.size()); ++c) {
      const MessageChannel& channel = channels[c];
      if (channel.from == r) counts_.sent += channel.samples.size();
      if (channel.to == r) counts_.received += channel.samples.size();
      if (channel.from != r && channel.to != r) continue;
      steps_.push_back(
          sample_steps(channel.samples, fmt::format("channel {} ({} from rank {} to "
                                                    "rank {})",
                                                    c, value_name(c), channel.from, channel.to)));
      if (!in_loop(c)) continue;
      const SampleSteps& steps = steps_.back();
      if (steps.first != mine_.first || steps.stride != mine_.stride ||
          steps.count != mine_.count) {
        throw Error(fmt::format(
            "rank {} runs {} sample(s) from {} every {}, but channel {} ({}) carries {} from {} "
            "every {}; generated rank programs take plans whose ranks exchange a value in every "
            "sample they run",
            r, mine_.count, mine_.first, mine_.stride, c, value_name(c), steps.count, steps.first,
            steps.stride));
      }
    }
  }

  std::string write(RankMessageCounts& counts) {
    counts = counts_;
    if (counts_.received + counts_.sent > 0) body_ += "  MPI_Comm comm = p.comm();\n";
    post_first_receives();
    if (r_ == 0) hand_out_inputs();
    write_loop();
    if (r_ == 0) gather_outputs();
    complete_sends();
    return body_;
  }

 private:
  // Channel c's entry in steps_ (channels of this rank, in order).
  const SampleSteps& steps(int c) const {
    int index = 0;
    for (int d = 0; d < c; ++d) index += channels_[d].from == r_ || channels_[d].to == r_;
    return steps_[static_cast<std::size_t>(index)];
  }
  std::string value_name(int c) const { return graph_.value(channels_[c].value).name; }
  int tag_count() const { return static_cast<int>(channels_.size()); }
  // Rank 0's hand-out of inputs and gather of outputs happen around the loop; every other
  // message of this rank is one of its samples'. A gathered output rank 0 reads itself is
  // waited for in the loop.
  bool in_loop(int c) const {
    const MessageChannel& channel = channels_[c];
    if (r_ != 0 || !channel.per_sample) return channel.from == r_ || channel.to == r_;
    if (channel.from == 0) return false;
    return read_in_loop(channel.value);
  }
  bool read_in_loop(ValueId value) const {
    for (NodeId node : nodes_) {
      for (ValueId input : graph_.node(node).inputs)
        if (input == value) return true;
    }
    return false;
  }
  // The buffer message `index` of channel c uses.
  std::string slot(int c, const std::string& index) const {
    const MessageChannel& channel = channels_[c];
    if (channel.per_sample || steps(c).count <= channel.slots) return index;
    return fmt::format("{} % {}", index, channel.slots);
  }
  std::string receive(int c, const std::string& buffer, const std::string& sample) const {
    return fmt::format(
        "p.check(MPI_Irecv(p.message({0}, {1}), p.capacity({0}), MPI_BYTE, /*from=*/{2}, "
        "/*tag=*/{3} * {4} + {0}, comm, p.request({0}, {1})), {0}, \"MPI_Irecv\");",
        c, buffer, channels_[c].from, sample, tag_count());
  }
  std::string send(int c, const std::string& buffer, const std::string& sample) const {
    return fmt::format(
        "p.check(MPI_Isend(p.message({0}, {1}), p.pack({0}, {1}, {2}), MPI_BYTE, /*to=*/{3}, "
        "/*tag=*/{2} * {4} + {0}, comm, p.request({0}, {1})), {0}, \"MPI_Isend\");",
        c, buffer, sample, channels_[c].to, tag_count());
  }
  // `line` once per message j < `count` of channel c, with `s` its sample.
  void each_message(int c, int count, const std::string& line, const std::string& comment) {
    body_ += fmt::format("  for (int j = 0; j < {}; ++j) {{  // {}\n", count, comment);
    body_ += fmt::format("    const int s = {};\n    {}\n  }}\n", sample_expression(steps(c), "j"),
                         line);
  }

  void post_first_receives() {
    bool any = false;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.to != r_) continue;
      if (!any) {
        body_ +=
            "  // Receives posted at the start: every sample's of rank 0's inputs and outputs, "
            "the first\n  // samples' of each other value (a buffer each, posted again once its "
            "sample is done).\n";
      }
      any = true;
      const ProgramValue& value = layout_.values[layout_.index_of[channel.value]];
      each_message(c, std::min(channel.slots, steps(c).count), receive(c, "j", "s"),
                   fmt::format("{} {} from rank {}", value.name, type_text(value), channel.from));
    }
  }

  void hand_out_inputs() {
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.from != 0 || in_loop(c)) continue;
      each_message(c, steps(c).count, send(c, "j", "s"),
                   fmt::format("{} to rank {}, every sample's", value_name(c), channel.to));
    }
  }

  // Rank 0: graph output `value` copied out as sample s's.
  void take_outputs(ValueId value, const std::string& indent) {
    const std::vector<ValueId>& outputs = graph_.outputs();
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o] == value)
        body_ +=
            fmt::format("{}p.take_output({}, s);  // {}\n", indent, o, graph_.value(value).name);
    }
  }

  void write_loop() {
    if (mine_.count == 0) return;
    body_ +=
        fmt::format("  for (int k = 0; k < {}; ++k) {{  // this rank's samples\n", mine_.count);
    body_ += fmt::format("    const int s = {};\n", sample_expression(mine_, "k"));
    std::vector<bool> waited(channels_.size(), false);
    if (r_ == 0 && reads_graph_input()) body_ += "    p.use_inputs(s);\n";
    for (NodeId id : nodes_) {
      for (ValueId input : graph_.node(id).inputs) {
        for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
          if (channels_[c].value != input || channels_[c].to != r_ || !in_loop(c) || waited[c])
            continue;
          waited[c] = true;
          body_ += fmt::format("    p.wait_receive({}, {}, s);  // {}\n", c, slot(c, "k"),
                               value_name(c));
          if (r_ == 0) take_outputs(input, "    ");
        }
      }
      body_ += fmt::format("    p.step({});  // {}\n", layout_.step_of_node[id],
                           step_comment(graph_, layout_, id));
      for (ValueId output : graph_.node(id).outputs) {
        if (output == kNoValue) continue;
        send_in_loop(output);
        if (r_ == 0) take_outputs(output, "    ");
      }
    }
    post_next_receives();
    body_ += "  }\n";
  }

  bool reads_graph_input() const {
    for (NodeId id : nodes_) {
      for (ValueId input : graph_.node(id).inputs)
        if (input != kNoValue && graph_.value(input).is_graph_input) return true;
    }
    return false;
  }

  void send_in_loop(ValueId value) {
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.value != value || channel.from != r_) continue;
      // The buffer's previous message must be gone before this one is packed into it.
      if (!channel.per_sample && steps(c).count > channel.slots)
        body_ += fmt::format("    if (k >= {0}) p.wait_send({1}, k % {0});\n", channel.slots, c);
      body_ += fmt::format("    {}  // {} to rank {}\n", send(c, slot(c, "k"), "s"), value_name(c),
                           channel.to);
    }
  }

  // After this rank's steps of a sample: each buffer it read takes a later sample's message.
  void post_next_receives() {
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.to != r_ || channel.per_sample || steps(c).count <= channel.slots) continue;
      body_ += fmt::format("    if (k + {} < {}) {{  // {}'s buffer takes a later sample\n",
                           channel.slots, steps(c).count, value_name(c));
      body_ += fmt::format("      const int later = s + {};\n      {}\n    }}\n",
                           channel.slots * steps(c).stride, receive(c, slot(c, "k"), "later"));
    }
  }

  void gather_outputs() {
    bool any = false;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.to != 0 || in_loop(c)) continue;
      if (!any) body_ += "  // The outputs other ranks computed.\n";
      any = true;
      std::string takes;
      for (std::size_t o = 0; o < graph_.outputs().size(); ++o) {
        if (graph_.outputs()[o] == channel.value)
          takes += fmt::format("\n    p.take_output({}, s);", o);
      }
      each_message(c, steps(c).count, fmt::format("p.wait_receive({}, j, s);{}", c, takes),
                   fmt::format("{} from rank {}", value_name(c), channel.from));
    }
  }

  void complete_sends() {
    bool any = false;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.from != r_ || steps(c).count == 0) continue;
      if (!any) body_ += "  // Sends complete before the next run reuses their buffers.\n";
      any = true;
      body_ += fmt::format("  for (int j = 0; j < {}; ++j) p.wait_send({}, j);  // {}\n",
                           std::min(channel.slots, steps(c).count), c, value_name(c));
    }
  }

  const Graph& graph_;
  const ProgramLayout& layout_;
  const std::vector<MessageChannel>& channels_;
  const int r_;
  SampleSteps mine_;
  std::vector<NodeId> nodes_;
  std::vector<SampleSteps> steps_;  // Per channel of this rank, in channel order.
  std::string body_;
  RankMessageCounts counts_;
};

}  // namespace

std::vector<MessageChannel> list_message_channels(const Graph& graph, const WorkerProgram& program,
                                                  bool rank_zero_io) {
  std::vector<MessageChannel> channels;
  for (int s = 0; s < program.samples; ++s) {
    for (const Hop& hop : hops_of_sample(graph, program.sample_worker[s], rank_zero_io)) {
      auto it = std::find_if(channels.begin(), channels.end(), [&](const MessageChannel& c) {
        return c.value == hop.value && c.from == hop.from && c.to == hop.to;
      });
      if (it == channels.end()) {
        channels.push_back({hop.value, hop.from, hop.to, {}, 1, false});
        it = channels.end() - 1;
      }
      it->samples.push_back(s);
    }
  }
  for (MessageChannel& channel : channels) {
    const Value& value = graph.value(channel.value);
    channel.per_sample = rank_zero_io && ((channel.from == 0 && value.is_graph_input) ||
                                          (channel.to == 0 && value.is_graph_output));
    const int count = static_cast<int>(channel.samples.size());
    channel.slots = channel.per_sample ? count : std::min(kRankMessageWindow, count);
  }
  return channels;
}

std::string rank_body(const Graph& graph, const WorkerProgram& program, const ProgramLayout& layout,
                      const std::vector<MessageChannel>& channels, int r,
                      RankMessageCounts& counts) {
  if (program.samples > 1) return RankLoopWriter(graph, program, layout, channels, r).write(counts);
  return RankBodyWriter(graph, program, layout, channels, r).write(counts);
}

}  // namespace cleave
