// The messages of a generated rank program: which values cross ranks for which samples, and
// each rank's MPI calls around its steps.
#include "codegen/rank_messages.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace cleave {

namespace {

struct Hop {
  ValueId value = kNoValue;
  int from = 0;
  int to = 0;
};

// One sample's messages, in the order values come to exist, its nodes run by `worker_of`.
std::vector<Hop> hops_of_sample(const Graph& graph, const std::vector<int>& worker_of) {
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
  for (ValueId input : graph.inputs()) {
    for (int to : readers_of(input, 0)) add(input, 0, to);
  }
  for (NodeId id : graph.topological_order()) {
    const int from = worker_of[id];
    for (ValueId output : graph.node(id).outputs) {
      if (output == kNoValue) continue;
      for (int to : readers_of(output, from)) add(output, from, to);
      if (graph.value(output).is_graph_output && from != 0) add(output, from, 0);
    }
  }
  return hops;
}

// Writes one rank's function body (see rank_body).
class RankBodyWriter {
 public:
  RankBodyWriter(const Graph& graph, const WorkerProgram& program, const ProgramLayout& layout,
                 const std::vector<MessageChannel>& channels, int r)
      : graph_(graph), program_(program), layout_(layout), channels_(channels), r_(r) {
    for (int c = 0; c < static_cast<int>(channels.size()); ++c) {
      const MessageChannel& channel = channels[c];
      for (int j = 0; j < static_cast<int>(channel.samples.size()); ++j) {
        const auto key = std::make_pair(channel.value, channel.samples[j]);
        if (channel.to == r) receives_[key].push_back({c, j});
        if (channel.from == r) sends_[key].push_back({c, j});
        if (channel.to == r) ++counts_.received;
        if (channel.from == r) ++counts_.sent;
      }
    }
  }

  std::string write(RankMessageCounts& counts) {
    counts = counts_;
    if (counts_.received + counts_.sent > 0) body_ += "  MPI_Comm comm = p.comm();\n";
    post_first_receives();
    if (r_ == 0) {
      for (int s = 0; s < program_.samples; ++s) {
        for (ValueId input : graph_.inputs()) send_all(input, s);
      }
    }
    const std::vector<SampleTask>& tasks = program_.stream_order[r_];
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const int sample = tasks[t].sample;
      if (t == 0 || tasks[t - 1].sample != sample) begin_sample(tasks, t);
      const Node& node = graph_.node(tasks[t].node);
      for (ValueId input : node.inputs) {
        if (input != kNoValue) wait(input, sample);
      }
      body_ += fmt::format("  p.step({});  // {}\n", layout_.step_of_node[tasks[t].node],
                           step_comment(graph_, layout_, tasks[t].node));
      for (ValueId output : node.outputs) {
        if (output == kNoValue) continue;
        send_all(output, sample);
        if (r_ == 0) take_outputs(output, sample);
      }
      if (t + 1 == tasks.size() || tasks[t + 1].sample != sample) post_next_receives(sample);
    }
    if (r_ == 0) gather_outputs();
    complete_sends();
    return body_;
  }

 private:
  using Message = std::pair<int, int>;  // Channel, index into its samples.

  bool stream() const { return program_.samples > 1; }
  int slot(const Message& m) const {
    const MessageChannel& channel = channels_[m.first];
    return channel.per_sample ? m.second : m.second % channel.slots;
  }
  int sample(const Message& m) const { return channels_[m.first].samples[m.second]; }
  // A message's buffer arguments: the channel, and with several samples its buffer.
  std::string buffer(const Message& m) const {
    return stream() ? fmt::format("{}, {}", m.first, slot(m)) : std::to_string(m.first);
  }
  std::string sample_note(const Message& m) const {
    return stream() ? fmt::format(", sample {}", sample(m)) : "";
  }

  void message_call(const char* function, const Message& m, int peer, const std::string& size,
                    const std::string& comment) {
    const int tag = sample(m) * static_cast<int>(channels_.size()) + m.first;
    body_ += fmt::format(
        "  p.check({0}(p.message({1}), {2}, MPI_BYTE, /*{3}=*/{4}, /*tag=*/{5}, comm, "
        "p.request({1})), {6}, \"{0}\");  // {7}\n",
        function, buffer(m), size, std::string(function) == "MPI_Isend" ? "to" : "from", peer, tag,
        m.first, comment);
  }

  void post_receive(const Message& m) {
    const MessageChannel& channel = channels_[m.first];
    const ProgramValue& value = layout_.values[layout_.index_of[channel.value]];
    message_call("MPI_Irecv", m, channel.from, fmt::format("p.capacity({})", m.first),
                 fmt::format("{} {} from rank {}{}", value.name, type_text(value), channel.from,
                             sample_note(m)));
  }

  // Every receive of one sample, and of a value's first samples (as many as its buffers).
  void post_first_receives() {
    bool any = false;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      const MessageChannel& channel = channels_[c];
      if (channel.to != r_) continue;
      if (!any) {
        body_ += stream() ? "  // Receives posted at the start: every sample's of rank 0's inputs "
                            "and outputs, the first\n  // samples' of each other value (a buffer "
                            "each, posted again once its sample is done).\n"
                          : "  // Every receive of the run, posted at its start.\n";
      }
      any = true;
      for (int j = 0; j < channel.slots; ++j) post_receive({c, j});
    }
  }

  // After this rank's steps of `sample`: each buffer it read takes a later sample's message.
  void post_next_receives(int sample) {
    for (auto& [key, messages] : receives_) {
      if (key.second != sample) continue;
      for (const Message& m : messages) {
        const MessageChannel& channel = channels_[m.first];
        const int next = m.second + channel.slots;
        if (!channel.per_sample && next < static_cast<int>(channel.samples.size()))
          post_receive({m.first, next});
      }
    }
  }

  void wait_send(const Message& m) {
    if (!waited_sends_.insert(m).second) return;
    body_ += fmt::format("  p.wait_send({});  // {}{}\n", buffer(m),
                         graph_.value(channels_[m.first].value).name, sample_note(m));
  }

  void send_all(ValueId value, int sample) {
    auto it = sends_.find({value, sample});
    if (it == sends_.end()) return;
    for (const Message& m : it->second) {
      const MessageChannel& channel = channels_[m.first];
      // The buffer's previous message must be gone before this one is packed into it.
      if (!channel.per_sample && m.second >= channel.slots)
        wait_send({m.first, m.second - channel.slots});
      const std::string pack = stream() ? fmt::format("p.pack({}, {})", buffer(m), sample)
                                        : fmt::format("p.pack({})", m.first);
      message_call(
          "MPI_Isend", m, channel.to, pack,
          fmt::format("{} to rank {}{}", graph_.value(value).name, channel.to, sample_note(m)));
    }
  }

  void wait(ValueId value, int sample) {
    auto it = receives_.find({value, sample});
    if (it == receives_.end()) return;
    for (const Message& m : it->second) {
      if (!waited_receives_.insert(m).second) continue;
      body_ += fmt::format("  p.wait_receive({}{});  // {}\n", buffer(m),
                           stream() ? fmt::format(", {}", sample) : "", graph_.value(value).name);
      if (r_ == 0) take_outputs(value, sample);
    }
  }

  // Rank 0 of a stream: the graph outputs `value` is, copied out as this sample's.
  void take_outputs(ValueId value, int sample) {
    if (!stream()) return;  // One sample: the run copies the outputs out at its end.
    const std::vector<ValueId>& outputs = graph_.outputs();
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o] == value)
        body_ +=
            fmt::format("  p.take_output({}, {});  // {}\n", o, sample, graph_.value(value).name);
    }
  }

  // A sample's first step on this rank: a heading, and on rank 0 the sample's inputs.
  void begin_sample(const std::vector<SampleTask>& tasks, std::size_t first) {
    if (!stream()) return;
    const int sample = tasks[first].sample;
    body_ += fmt::format("  // Sample {}\n", sample);
    if (r_ != 0) return;
    for (std::size_t t = first; t < tasks.size() && tasks[t].sample == sample; ++t) {
      for (ValueId input : graph_.node(tasks[t].node).inputs) {
        if (input != kNoValue && graph_.value(input).is_graph_input) {
          body_ += fmt::format("  p.use_inputs({});\n", sample);
          return;
        }
      }
    }
  }

  void gather_outputs() {
    const std::size_t before = body_.size();
    const std::string heading = "  // The outputs other ranks computed.\n";
    body_ += heading;
    for (int s = 0; s < program_.samples; ++s) {
      for (ValueId output : graph_.outputs()) wait(output, s);
    }
    if (body_.size() == before + heading.size()) body_.resize(before);
  }

  void complete_sends() {
    std::vector<Message> open;
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      if (channels_[c].from != r_) continue;
      for (int j = 0; j < static_cast<int>(channels_[c].samples.size()); ++j) {
        if (!waited_sends_.count({c, j})) open.push_back({c, j});
      }
    }
    if (open.empty()) return;
    body_ += "  // Sends complete before the next run reuses their buffers.\n";
    for (const Message& m : open) wait_send(m);
  }

  const Graph& graph_;
  const WorkerProgram& program_;
  const ProgramLayout& layout_;
  const std::vector<MessageChannel>& channels_;
  const int r_;
  std::string body_;
  RankMessageCounts counts_;
  std::map<std::pair<ValueId, int>, std::vector<Message>> receives_, sends_;  // (value, sample)
  std::set<Message> waited_receives_, waited_sends_;
};

}  // namespace

std::vector<MessageChannel> list_message_channels(const Graph& graph,
                                                  const WorkerProgram& program) {
  std::vector<MessageChannel> channels;
  for (int s = 0; s < program.samples; ++s) {
    for (const Hop& hop : hops_of_sample(graph, program.sample_worker[s])) {
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
    channel.per_sample =
        (channel.from == 0 && value.is_graph_input) || (channel.to == 0 && value.is_graph_output);
    const int count = static_cast<int>(channel.samples.size());
    channel.slots = channel.per_sample ? count : std::min(kRankMessageWindow, count);
  }
  return channels;
}

std::string rank_body(const Graph& graph, const WorkerProgram& program, const ProgramLayout& layout,
                      const std::vector<MessageChannel>& channels, int r,
                      RankMessageCounts& counts) {
  return RankBodyWriter(graph, program, layout, channels, r).write(counts);
}

}  // namespace cleave
