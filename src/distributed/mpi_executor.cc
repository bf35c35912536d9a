// MPI executor: channels between ranks, early receives, sends as soon as values exist, pipelining.
#include "distributed/mpi_executor.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>
#include <tuple>

#include "distributed/fault_injection.h"
#include "distributed/message.h"
#include "distributed/mpi_session.h"
#include "runtime/executor.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// A value that crosses ranks once per run: produced by a task (or, for a graph input, held by
// rank 0) on `from`, needed on `to`. Its index is the MPI tag.
struct Channel {
  int producer = -1;  // Task id; -1: a graph input that rank 0 sends.
  int output = 0;     // Output index of the producer's node.
  ValueId value = kNoValue;
  int sample = 0;  // Plan sample (hyperclustered plans).
  int from = 0;
  int to = 0;
  MessageExpectation expect;
};

struct Source {
  enum class Kind { kNone, kConstant, kGraphInput, kLocal, kRemote } kind = Kind::kNone;
  ValueId value = kNoValue;
  int task = -1;  // Producer task (kLocal, kRemote).
  int output = 0;
  int channel = -1;  // kRemote.
};

struct LocalTask {
  int task = -1;
  NodeId node = -1;
  int sample = 0;
  std::vector<Source> sources;
  std::vector<std::vector<int>> sends;  // Per output: channels it feeds.
  std::vector<int> uses;                // Per output: local readers.
  std::vector<bool> keep;               // Per output: a graph output rank 0 returns.
  std::unique_ptr<NodeRunner> runner;
};

// One run in flight on this rank.
struct RunState {
  int64_t run = 0;
  Clock::time_point start;
  std::vector<MPI_Request> requests;  // Per receive channel of this rank.
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<Tensor> received;  // Per receive channel, once checked.
  std::vector<bool> done;
  std::vector<std::vector<Tensor>> outputs;  // Rank 0: per plan sample, graph outputs.
  std::vector<std::vector<bool>> missing;    // Rank 0: per output, still to be received.
  int outputs_missing = 0;                   // Rank 0: remote outputs not yet received.
  bool assembled = false;                    // Rank 0: its tasks have run, outputs listed.
};

struct PendingSend {
  int64_t run = 0;
  int channel = -1;
  MPI_Request request = MPI_REQUEST_NULL;
  std::shared_ptr<Buffer> buffer;
};

}  // namespace

std::vector<ValueId> initializers_of_worker(const Graph& graph, const TaskGraph& tasks,
                                            const Plan& plan, int worker) {
  std::set<ValueId> used;
  for (int task : plan.order.at(worker)) {
    for (ValueId input : graph.node(tasks.tasks[task].node).inputs) {
      if (input != kNoValue && graph.value(input).initializer) used.insert(input);
    }
  }
  if (worker == 0) {
    for (ValueId output : graph.outputs()) {
      if (graph.value(output).initializer) used.insert(output);
    }
  }
  return {used.begin(), used.end()};
}

double keep_weights_of(Graph& graph, const TaskGraph& tasks, const Plan& plan, int worker) {
  std::vector<ValueId> kept = initializers_of_worker(graph, tasks, plan, worker);
  double bytes = 0;
  for (ValueId id : graph.initializers()) {
    auto& data = *graph.value(id).initializer;
    if (std::binary_search(kept.begin(), kept.end(), id)) {
      if (data.bytes) bytes += static_cast<double>(data.bytes->size());
    } else {
      data.bytes.reset();
    }
  }
  return bytes;
}

struct MpiExecutor::Impl {
  Graph graph;
  TaskGraph tasks;
  Plan plan;
  MPI_Comm comm = MPI_COMM_NULL;
  MpiOptions options;
  int rank = 0;
  int ranks = 1;
  int samples = 1;  // Plan samples per run.
  std::vector<Channel> channels;
  std::vector<int> receive_channels;            // Channels to this rank, in channel order.
  std::vector<int> receive_slot;                // Per channel: index in receive_channels, or -1.
  std::vector<int> input_sends;                 // Rank 0: graph-input channels it sends.
  std::vector<bool> output_slot;                // Per receive slot: a graph output (rank 0).
  std::vector<LocalTask> local;                 // This rank's tasks in plan order.
  std::vector<std::vector<Tensor>> outputs_of;  // Per local slot: outputs of the current run.
  // Rank 0: per plan sample, per graph output: where it comes from.
  struct OutputSource {
    enum class Kind { kConstant, kGraphInput, kLocal, kRemote } kind = Kind::kLocal;
    ValueId value = kNoValue;
    int slot = -1;  // kLocal: local slot.
    int output = 0;
    int channel = -1;  // kRemote.
  };
  std::vector<std::vector<OutputSource>> output_sources;
  std::vector<Tensor> constants;
  BufferPool pool;
  BufferPool message_pool;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::unique_ptr<dnnl::stream> stream;
  std::deque<PendingSend> sends;
  std::deque<RunState> runs;  // Oldest first.
  FaultInjection fault;
  RankReport* report = nullptr;

  std::string task_text(int task) const {
    return fmt::format("task '{}' (node {})", tasks.tasks[task].name,
                       graph.describe(tasks.tasks[task].node));
  }

  std::chrono::steady_clock::time_point deadline() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options.rank_timeout_seconds));
  }

  void post_receives(RunState& state) {
    const std::size_t count = receive_channels.size();
    state.requests.assign(count, MPI_REQUEST_NULL);
    state.buffers.assign(count, nullptr);
    state.received.assign(count, Tensor());
    state.done.assign(count, false);
    for (std::size_t i = 0; i < count; ++i) {
      const Channel& channel = channels[receive_channels[i]];
      const std::size_t bytes =
          kMessagePrefixBytes + payload_capacity(channel.expect.dtype, channel.expect.shape);
      state.buffers[i] = message_pool.acquire(bytes);
      int code = MPI_Irecv(state.buffers[i]->data(), static_cast<int>(bytes), MPI_BYTE,
                           channel.from, receive_channels[i], comm, &state.requests[i]);
      if (code != MPI_SUCCESS) {
        throw Error(fmt::format("could not post the receive of {}: {}", channel.expect.what,
                                mpi_error_text(code)));
      }
    }
  }

  // Turns a completed receive into a tensor after checking it against the plan.
  void accept(RunState& state, std::size_t slot, const MPI_Status& status) {
    const Channel& channel = channels[receive_channels[slot]];
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    MessageHeader header;
    std::memcpy(&header, state.buffers[slot]->data(),
                std::min<std::size_t>(sizeof header, state.buffers[slot]->size()));
    MessageExpectation expect = channel.expect;
    expect.run = state.run;
    dnnl_memory_desc_t layout{};
    std::memcpy(&layout, state.buffers[slot]->data() + sizeof header, sizeof layout);
    std::optional<dnnl::memory::desc> blocked =
        check_message(header, static_cast<std::size_t>(count), expect, &layout);
    state.received[slot] =
        Tensor::view(expect.dtype, expect.shape, state.buffers[slot], kMessagePrefixBytes);
    if (blocked) state.received[slot].set_layout(*blocked);
    state.buffers[slot].reset();
    state.done[slot] = true;
    report->bytes_received += count;
    ++report->messages_received;
  }

  // Waits for one receive of `state`, bounded by the rank timeout.
  const Tensor& receive(RunState& state, int channel_index, const std::string& step) {
    const std::size_t slot = static_cast<std::size_t>(receive_slot[channel_index]);
    if (!state.done[slot]) {
      const Channel& channel = channels[channel_index];
      MPI_Status status = wait_until(
          state.requests[slot], deadline(),
          [&] {
            return fmt::format("{} from rank {} (run {}), needed by {}", channel.expect.what,
                               channel.from, state.run, step);
          },
          options.rank_timeout_seconds);
      accept(state, slot, status);
    }
    return state.received[slot];
  }

  // Tests, without waiting, whether a receive has landed (rank 0's output receives).
  void poll(RunState& state, std::size_t slot) {
    if (state.done[slot]) return;
    int done = 0;
    MPI_Status status{};
    int code = MPI_Test(&state.requests[slot], &done, &status);
    if (code != MPI_SUCCESS) {
      throw Error(fmt::format("MPI failed while receiving {} from rank {}: {}",
                              channels[receive_channels[slot]].expect.what,
                              channels[receive_channels[slot]].from, mpi_error_text(code)));
    }
    if (done) accept(state, slot, status);
  }

  void send(int channel_index, int64_t run, const Tensor& value) {
    const Channel& channel = channels[channel_index];
    MessageHeader header = make_header(channel_index, run, value.dtype(), value.shape());
    if (value.shape() != channel.expect.shape || value.dtype() != channel.expect.dtype) {
      throw Error(fmt::format(
          "{} came out as {}, not the {}[{}] the plan sends", channel.expect.what, value.describe(),
          dtype_name(channel.expect.dtype), fmt::join(channel.expect.shape, ",")));
    }
    if (value.is_blocked()) {
      header.blocked = 1;
      header.payload_bytes = value.byte_size();
    }
    std::size_t payload = header.payload_bytes;
    fault.corrupt(header, payload);
    const std::size_t bytes = kMessagePrefixBytes + payload;
    PendingSend pending;
    pending.run = run;
    pending.channel = channel_index;
    pending.buffer = message_pool.acquire(bytes);
    std::memcpy(pending.buffer->data(), &header, sizeof header);
    if (value.is_blocked()) {
      std::memcpy(pending.buffer->data() + sizeof header, &value.layout()->data,
                  sizeof(dnnl_memory_desc_t));
    }
    std::memcpy(pending.buffer->data() + kMessagePrefixBytes, value.raw(),
                std::min<std::size_t>(payload, value.byte_size()));
    int code = MPI_Isend(pending.buffer->data(), static_cast<int>(bytes), MPI_BYTE, channel.to,
                         channel_index, comm, &pending.request);
    if (code != MPI_SUCCESS) {
      throw Error(fmt::format("could not send {} to rank {}: {}", channel.expect.what, channel.to,
                              mpi_error_text(code)));
    }
    report->bytes_sent += static_cast<double>(bytes);
    ++report->messages_sent;
    sends.push_back(std::move(pending));
  }

  // Completes sends that have finished; with `until_run` >= 0, waits for every send of runs
  // up to it (bounded by the rank timeout).
  void progress_sends(int64_t until_run) {
    while (!sends.empty()) {
      PendingSend& oldest = sends.front();
      int done = 0;
      if (oldest.run <= until_run) {
        const Channel& channel = channels[oldest.channel];
        wait_until(
            oldest.request, deadline(),
            [&] {
              return fmt::format("rank {} to take {} (run {})", channel.to, channel.expect.what,
                                 oldest.run);
            },
            options.rank_timeout_seconds);
        done = 1;
      } else {
        MPI_Status status{};
        int code = MPI_Test(&oldest.request, &done, &status);
        if (code != MPI_SUCCESS) {
          throw Error(fmt::format("MPI failed sending {} to rank {}: {}",
                                  channels[oldest.channel].expect.what, channels[oldest.channel].to,
                                  mpi_error_text(code)));
        }
      }
      if (!done) break;
      sends.pop_front();
    }
  }

  // Rank 0: polls (or, up to `until_run`, waits for) the remote outputs of runs in flight and
  // moves finished runs' outputs into `result`.
  void progress_outputs(int64_t until_run, StreamResult& result) {
    while (!runs.empty()) {
      RunState& state = runs.front();
      if (!state.assembled) break;
      for (int sample = 0; sample < samples && state.outputs_missing > 0; ++sample) {
        for (std::size_t i = 0; i < output_sources[sample].size(); ++i) {
          const OutputSource& source = output_sources[sample][i];
          if (!state.missing[sample][i]) continue;
          if (state.run <= until_run) {
            receive(state, source.channel, "the outputs on rank 0");
          } else {
            poll(state, static_cast<std::size_t>(receive_slot[source.channel]));
          }
          if (!state.done[receive_slot[source.channel]]) continue;
          state.outputs[sample][i] = state.received[receive_slot[source.channel]];
          state.missing[sample][i] = false;
          --state.outputs_missing;
        }
      }
      if (state.outputs_missing > 0) break;
      double seconds = std::chrono::duration<double>(Clock::now() - state.start).count();
      for (int sample = 0; sample < samples; ++sample) {
        result.outputs[state.run * samples + sample] = std::move(state.outputs[sample]);
        result.sample_seconds[state.run * samples + sample] = seconds;
      }
      runs.pop_front();
    }
  }

  void run_tasks(RunState& state, const std::vector<std::map<std::string, Tensor>>& inputs,
                 Clock::time_point stream_start, std::vector<Trace::Event>& events,
                 StreamResult& result) {
    std::vector<const Tensor*> arguments;
    std::vector<bool> constant;
    for (std::size_t slot = 0; slot < local.size(); ++slot) {
      LocalTask& task = local[slot];
      fault.before_task(state.run, static_cast<int>(slot));
      auto wait_start = Clock::now();
      arguments.clear();
      constant.clear();
      for (const Source& source : task.sources) {
        switch (source.kind) {
          case Source::Kind::kNone:
            arguments.push_back(nullptr);
            constant.push_back(false);
            break;
          case Source::Kind::kConstant:
            arguments.push_back(&constants[source.value]);
            constant.push_back(true);
            break;
          case Source::Kind::kGraphInput:
            arguments.push_back(
                &inputs[state.run * samples + task.sample].at(graph.value(source.value).name));
            constant.push_back(false);
            break;
          case Source::Kind::kLocal:
            arguments.push_back(&outputs_of[source.task][source.output]);
            constant.push_back(false);
            break;
          case Source::Kind::kRemote:
            arguments.push_back(&receive(state, source.channel, task_text(task.task)));
            constant.push_back(false);
            break;
        }
      }
      auto start = Clock::now();
      std::vector<Tensor>& outputs = outputs_of[slot];
      task.runner->run(arguments, constant, outputs, pool, engine, *stream, options.threads);
      stream->wait();
      auto end = Clock::now();
      for (std::size_t k = 0; k < task.sends.size(); ++k) {
        // Sent in the producer's layout: its consumers all accept it (or it would be plain),
        // and reading it as they would in one process keeps the results bitwise equal.
        for (int channel : task.sends[k]) send(channel, state.run, outputs[k]);
      }
      const auto seconds = [&](Clock::time_point t) {
        return std::chrono::duration<double>(t - stream_start).count();
      };
      events.push_back(Trace::Event{task.task, rank, seconds(start), seconds(end),
                                    std::chrono::duration<double>(start - wait_start).count()});
      // Let go of values no later local task reads.
      for (const Source& source : task.sources) {
        if (source.kind != Source::Kind::kLocal) continue;
        if (--remaining[source.task][source.output] == 0 && !local[source.task].keep[source.output])
          outputs_of[source.task][source.output] = Tensor();
      }
      for (std::size_t k = 0; k < outputs.size(); ++k) {
        if (task.uses[k] == 0 && !task.keep[k]) outputs[k] = Tensor();
      }
      progress_sends(-1);
      if (rank == 0 && runs.size() > 1) progress_outputs(-1, result);
    }
    // Received values are views of message buffers: hand them back for the next run (rank 0
    // keeps the outputs it gathers).
    for (std::size_t slot = 0; slot < state.received.size(); ++slot) {
      if (!output_slot[slot]) state.received[slot] = Tensor();
    }
  }

  std::vector<std::vector<int>> remaining;  // Per local slot, per output: local reads left.
};

MpiExecutor::MpiExecutor(const Graph& graph, const TaskGraph& tasks, const Plan& plan,
                         MPI_Comm comm, MpiOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.graph = graph;
  s.tasks = tasks;
  s.plan = plan;
  s.comm = comm;
  s.options = options;
  s.report = &report_;
  MPI_Comm_rank(comm, &s.rank);
  MPI_Comm_size(comm, &s.ranks);
  validate_plan(plan, tasks);
  if (static_cast<int>(plan.order.size()) != s.ranks) {
    throw Error(
        fmt::format("the plan has {} workers, but {} ranks were started; start as many "
                    "ranks as the plan has workers (mpirun -np {})",
                    plan.order.size(), s.ranks, plan.order.size()));
  }
  std::map<std::pair<NodeId, int>, std::vector<int>> tasks_of;
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    const Task& task = tasks.tasks[t];
    if (task.node < 0 || static_cast<std::size_t>(task.node) >= graph.node_capacity() ||
        graph.node(task.node).removed) {
      throw Error(fmt::format("plan task '{}' refers to node {}, which the graph does not have",
                              task.name, task.node));
    }
    if (task.batch_end != task.batch_begin + 1) {
      throw Error(
          fmt::format("plan task '{}' covers samples [{}, {}); the MPI executor runs one "
                      "sample per task",
                      task.name, task.batch_begin, task.batch_end));
    }
    tasks_of[{task.node, static_cast<int>(task.batch_begin)}].push_back(static_cast<int>(t));
    s.samples = std::max(s.samples, static_cast<int>(task.batch_end));
  }
  for (NodeId node : graph.node_ids()) {
    for (int sample = 0; sample < s.samples; ++sample) {
      if (!tasks_of.count({node, sample})) {
        throw Error(
            fmt::format("plan does not run node {} for sample {}", graph.describe(node), sample));
      }
    }
  }
  std::vector<int> worker(tasks.tasks.size()), position(tasks.tasks.size());
  for (std::size_t w = 0; w < plan.order.size(); ++w) {
    for (std::size_t i = 0; i < plan.order[w].size(); ++i) {
      worker[plan.order[w][i]] = static_cast<int>(w);
      position[plan.order[w][i]] = static_cast<int>(i);
    }
  }
  std::set<std::pair<int, int>> edges(tasks.edges.begin(), tasks.edges.end());
  // The producer a task reads: as the thread executor chooses among cloned copies.
  const auto producer_for = [&](NodeId producer, int sample, int consumer) {
    const auto& candidates = tasks_of.at({producer, sample});
    int chosen = candidates.front();
    for (int candidate : candidates) {
      if (edges.count({candidate, consumer})) chosen = candidate;
    }
    for (int candidate : candidates) {
      if (worker[candidate] == worker[consumer] && position[candidate] < position[consumer])
        chosen = candidate;
    }
    return chosen;
  };
  const auto output_index = [&](ValueId value) {
    const auto& outputs = graph.node(graph.value(value).producer).outputs;
    return static_cast<int>(std::find(outputs.begin(), outputs.end(), value) - outputs.begin());
  };

  // Channels, enumerated identically on every rank.
  std::map<std::tuple<int, ValueId, int, int>, int> channel_of;
  const auto channel_for = [&](int producer, ValueId value, int sample, int from, int to) {
    auto key = std::make_tuple(producer, value, sample, to);
    auto found = channel_of.find(key);
    if (found != channel_of.end()) return found->second;
    const Value& v = graph.value(value);
    if (!v.shape.is_static() || v.dtype == DataType::kUndefined) {
      throw Error(
          fmt::format("value '{}' crosses from rank {} to rank {}, but its type or shape "
                      "is not static; fix the input shapes (--shape)",
                      v.name, from, to));
    }
    Channel channel;
    channel.producer = producer;
    channel.output = producer >= 0 ? output_index(value) : 0;
    channel.value = value;
    channel.sample = sample;
    channel.from = from;
    channel.to = to;
    channel.expect.channel = static_cast<int>(s.channels.size());
    channel.expect.dtype = v.dtype;
    channel.expect.shape = v.shape.sizes();
    channel.expect.what =
        producer >= 0 ? fmt::format("value '{}' of task '{}'", v.name, tasks.tasks[producer].name)
                      : fmt::format("graph input '{}' (sample {})", v.name, sample);
    s.channels.push_back(channel);
    channel_of[key] = channel.expect.channel;
    return channel.expect.channel;
  };
  std::vector<std::vector<Source>> sources(tasks.tasks.size());
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    const int sample = static_cast<int>(tasks.tasks[t].batch_begin);
    for (ValueId input : graph.node(tasks.tasks[t].node).inputs) {
      Source source;
      source.value = input;
      if (input == kNoValue) {
        source.kind = Source::Kind::kNone;
      } else if (graph.value(input).initializer) {
        source.kind = Source::Kind::kConstant;
      } else if (graph.value(input).producer < 0) {
        source.kind = Source::Kind::kGraphInput;
        if (worker[t] != 0) {
          source.kind = Source::Kind::kRemote;
          source.channel = channel_for(-1, input, sample, 0, worker[t]);
        }
      } else {
        int producer = producer_for(graph.value(input).producer, sample, static_cast<int>(t));
        if (worker[producer] == worker[t] && position[producer] > position[static_cast<int>(t)]) {
          throw Error(
              fmt::format("plan task '{}' reads task '{}', which runs after it on worker {}",
                          tasks.tasks[t].name, tasks.tasks[producer].name, worker[t]));
        }
        source.task = producer;
        source.output = output_index(input);
        if (worker[producer] == worker[t]) {
          source.kind = Source::Kind::kLocal;
        } else {
          source.kind = Source::Kind::kRemote;
          source.channel = channel_for(producer, input, sample, worker[producer], worker[t]);
        }
      }
      sources[t].push_back(source);
    }
  }
  // Graph outputs go to rank 0.
  s.output_sources.resize(s.samples);
  for (int sample = 0; sample < s.samples; ++sample) {
    for (ValueId id : graph.outputs()) {
      const Value& v = graph.value(id);
      Impl::OutputSource source;
      source.value = id;
      if (v.initializer) {
        source.kind = Impl::OutputSource::Kind::kConstant;
      } else if (v.producer < 0) {
        source.kind = Impl::OutputSource::Kind::kGraphInput;
      } else {
        const auto& candidates = tasks_of.at({v.producer, sample});
        int producer = candidates.front();
        for (int candidate : candidates) {
          if (worker[candidate] == 0) producer = candidate;
        }
        source.slot = producer;  // Task id for now; a local slot below.
        source.output = output_index(id);
        if (worker[producer] != 0) {
          source.kind = Impl::OutputSource::Kind::kRemote;
          source.channel = channel_for(producer, id, sample, worker[producer], 0);
        }
      }
      s.output_sources[sample].push_back(source);
    }
  }
  int tag_limit = 32767;
  {
    int* value = nullptr;
    int found = 0;
    if (MPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found) == MPI_SUCCESS && found && value)
      tag_limit = *value;
  }
  if (static_cast<int64_t>(s.channels.size()) > tag_limit) {
    throw Error(fmt::format("the plan moves {} values between ranks, more than this MPI's {} tags",
                            s.channels.size(), tag_limit));
  }

  // This rank's part.
  std::vector<int> slot_of(tasks.tasks.size(), -1);
  const auto& order = plan.order[s.rank];
  for (std::size_t i = 0; i < order.size(); ++i) slot_of[order[i]] = static_cast<int>(i);
  s.receive_slot.assign(s.channels.size(), -1);
  for (std::size_t c = 0; c < s.channels.size(); ++c) {
    if (s.channels[c].to == s.rank) {
      s.receive_slot[c] = static_cast<int>(s.receive_channels.size());
      s.receive_channels.push_back(static_cast<int>(c));
    }
    if (s.channels[c].from == s.rank && s.channels[c].producer < 0)
      s.input_sends.push_back(static_cast<int>(c));
  }
  for (int t : order) {
    LocalTask task;
    task.task = t;
    task.node = tasks.tasks[t].node;
    task.sample = static_cast<int>(tasks.tasks[t].batch_begin);
    task.sources = sources[t];
    const std::size_t outputs = graph.node(task.node).outputs.size();
    task.sends.resize(outputs);
    task.uses.assign(outputs, 0);
    task.keep.assign(outputs, false);
    bool blocked = options.blocked_layouts;
    for (ValueId output : graph.node(task.node).outputs)
      blocked = blocked && blocked_layout_allowed(s.graph, output);
    task.runner = std::make_unique<NodeRunner>(
        s.graph, task.node, blocked,
        options.blocked_layouts ? options.convolution_family : ConvolutionFamily::kBlocked);
    s.local.push_back(std::move(task));
  }
  for (LocalTask& task : s.local) {
    for (Source& source : task.sources) {
      if (source.kind == Source::Kind::kLocal) {
        source.task = slot_of[source.task];
        ++s.local[source.task].uses[source.output];
      }
    }
  }
  for (std::size_t c = 0; c < s.channels.size(); ++c) {
    const Channel& channel = s.channels[c];
    if (channel.from == s.rank && channel.producer >= 0)
      s.local[slot_of[channel.producer]].sends[channel.output].push_back(static_cast<int>(c));
  }
  s.output_slot.assign(s.receive_channels.size(), false);
  if (s.rank == 0) {
    for (auto& per_sample : s.output_sources) {
      for (auto& source : per_sample) {
        if (source.kind == Impl::OutputSource::Kind::kRemote)
          s.output_slot[s.receive_slot[source.channel]] = true;
        if (source.kind != Impl::OutputSource::Kind::kLocal) continue;
        source.slot = slot_of[source.slot];
        s.local[source.slot].keep[source.output] = true;
      }
    }
  }
  s.outputs_of.resize(s.local.size());
  s.remaining.resize(s.local.size());
  s.constants.resize(graph.value_capacity());
  for (ValueId id : graph.initializers()) {
    const TensorData& data = *graph.value(id).initializer;
    if (!data.bytes) continue;  // Another rank's weights.
    s.constants[id] = Tensor::borrow(data.dtype, data.dims, data.bytes->data());
    report_.weight_bytes += static_cast<double>(data.bytes->size());
  }
  report_.tasks = static_cast<int>(s.local.size());
  s.stream = std::make_unique<dnnl::stream>(s.engine);
  s.fault = FaultInjection::from_environment(s.rank);
}

MpiExecutor::~MpiExecutor() {
  // Requests still posted after a failure: cancel receives so MPI_Finalize is not kept waiting.
  for (RunState& state : impl_->runs) {
    for (MPI_Request& request : state.requests) {
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    }
  }
}

int MpiExecutor::samples_per_run() const {
  return impl_->samples;
}

StreamResult MpiExecutor::run(const std::vector<std::map<std::string, Tensor>>& inputs, int runs) {
  Impl& s = *impl_;
  if (runs < 1) throw Error("a stream needs at least one run");
  if (s.rank == 0) {
    if (static_cast<int>(inputs.size()) != runs * s.samples) {
      throw Error(fmt::format("{} run(s) of a {}-sample plan need {} input samples, {} were given",
                              runs, s.samples, runs * s.samples, inputs.size()));
    }
    for (const auto& sample : inputs) check_inputs(s.graph, sample);
  }
  report_.bytes_sent = report_.bytes_received = 0;
  report_.messages_sent = report_.messages_received = 0;
  StreamResult result;
  if (s.rank == 0) {
    result.outputs.resize(static_cast<std::size_t>(runs) * s.samples);
    result.sample_seconds.assign(static_cast<std::size_t>(runs) * s.samples, 0);
  }
  std::vector<Trace::Event> events;
  events.reserve(s.local.size() * runs);
  omp_set_num_threads(std::max(1, s.options.threads));
  const auto stream_start = Clock::now();
  for (int run = 0; run < runs; ++run) {
    // The pipeline's depth: older runs' messages must have left before this one starts.
    s.progress_sends(run - s.options.window);
    if (s.rank == 0) s.progress_outputs(run - s.options.window, result);
    s.runs.emplace_back();
    RunState& state = s.runs.back();
    state.run = run;
    state.start = Clock::now();
    s.post_receives(state);
    for (int channel : s.input_sends) {
      const Channel& c = s.channels[channel];
      s.send(channel, run,
             inputs[static_cast<std::size_t>(run) * s.samples + c.sample].at(
                 s.graph.value(c.value).name));
    }
    for (std::size_t slot = 0; slot < s.local.size(); ++slot) {
      s.remaining[slot] = s.local[slot].uses;
      s.outputs_of[slot].clear();
    }
    s.run_tasks(state, inputs, stream_start, events, result);
    if (s.rank == 0) {
      state.outputs.assign(s.samples, {});
      state.missing.assign(s.samples, std::vector<bool>(s.graph.outputs().size(), false));
      state.outputs_missing = 0;
      for (int sample = 0; sample < s.samples; ++sample) {
        for (const auto& source : s.output_sources[sample]) {
          Tensor value;
          switch (source.kind) {
            case Impl::OutputSource::Kind::kConstant:
              value = s.constants[source.value];
              break;
            case Impl::OutputSource::Kind::kGraphInput:
              value = inputs[static_cast<std::size_t>(run) * s.samples + sample].at(
                  s.graph.value(source.value).name);
              break;
            case Impl::OutputSource::Kind::kLocal:
              value = to_plain(s.outputs_of[source.slot][source.output], s.engine, *s.stream);
              if (value.raw() == s.outputs_of[source.slot][source.output].raw()) {
                // Already plain: copy, so the pool may reuse the buffer in the next run.
                Tensor copy = Tensor::allocate(value.dtype(), value.shape());
                std::memcpy(copy.raw(), value.raw(), value.byte_size());
                value = copy;
              }
              break;
            case Impl::OutputSource::Kind::kRemote:
              ++state.outputs_missing;
              state.missing[sample][state.outputs[sample].size()] = true;
              break;
          }
          state.outputs[sample].push_back(value);
        }
      }
    }
    state.assembled = true;
    for (auto& outputs : s.outputs_of) outputs.clear();
    if (s.rank != 0) s.runs.pop_front();
  }
  s.progress_sends(runs);
  if (s.rank == 0) s.progress_outputs(runs, result);
  result.seconds = std::chrono::duration<double>(Clock::now() - stream_start).count();
  report_.peak_activation_bytes = s.pool.reserved_bytes();
  trace_.events = std::move(events);
  trace_.makespan = 0;
  for (const auto& event : trace_.events) trace_.makespan = std::max(trace_.makespan, event.end);
  return result;
}

}  // namespace cleave
