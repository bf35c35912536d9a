// Generated rank programs at run time: checked messages per channel, bounded waits, rank 0's main.
#include "codegen_runtime/rank_program.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "codegen_runtime/program_main.h"
#include "distributed/message.h"
#include "distributed/mpi_session.h"
#include "distributed/rank_sync.h"
#include "runtime/tensor.h"
#include "runtime/wait_policy.h"

namespace cleave {

struct RankProgram::Impl {
  const RankProgramTables& tables;
  StaticProgram program;
  MPI_Comm comm;
  int rank = 0;
  double timeout = 60;
  int samples = 1;
  int64_t run = -1;
  // Per channel of this rank, per slot (other channels: none).
  std::vector<std::vector<std::unique_ptr<Buffer>>> messages;
  std::vector<std::vector<MPI_Request>> requests;
  std::vector<MessageExpectation> expectations;
  // A stream's run on rank 0: the inputs and outputs of every sample, sample after sample.
  const void* const* inputs = nullptr;
  void* const* outputs = nullptr;
  // A stream: the values a received message holds now, and each one's tensor before it (its
  // arena place, or nothing yet), given back when this rank computes the value itself.
  std::vector<bool> on_message;
  std::vector<Tensor> home;
  std::vector<std::vector<int>> views_of;       // Per value: the values that alias it.
  std::chrono::steady_clock::time_point start;  // Of the run.
  std::vector<double> sample_seconds;           // Rank 0 of a stream.

  Impl(const RankProgramTables& t, const std::string& weights_path, MPI_Comm c, double seconds)
      : tables(t),
        program(*t.program, weights_path, /*worker_threads=*/false),
        comm(c),
        timeout(seconds),
        samples(std::max(1, t.samples)) {
    MPI_Comm_rank(comm, &rank);
    const StaticProgramTables& p = *t.program;
    check_tags();
    requests.resize(static_cast<std::size_t>(t.channel_count));
    messages.resize(static_cast<std::size_t>(t.channel_count));
    for (int ch = 0; ch < t.channel_count; ++ch) {
      const RankChannel& channel = t.channels[ch];
      const StaticValue& value = p.values[channel.value];
      MessageExpectation expect;
      expect.channel = ch;
      expect.dtype = static_cast<DataType>(value.dtype);
      expect.shape.assign(value.dims, value.dims + value.rank);
      expect.what =
          fmt::format("value '{}' from rank {} to rank {}", value.name, channel.from, channel.to);
      expectations.push_back(expect);
      if (channel.from != rank && channel.to != rank) continue;
      const std::size_t payload = std::max<std::size_t>(
          payload_capacity(expect.dtype, expect.shape), static_cast<std::size_t>(value.bytes));
      for (int slot = 0; slot < std::max(1, channel.slots); ++slot) {
        messages[ch].push_back(std::make_unique<Buffer>(kMessagePrefixBytes + payload));
        requests[ch].push_back(MPI_REQUEST_NULL);
      }
    }
    on_message.assign(static_cast<std::size_t>(p.value_count), false);
    home.resize(static_cast<std::size_t>(p.value_count));
    views_of.resize(static_cast<std::size_t>(p.value_count));
    for (int v = 0; v < p.value_count; ++v) {
      if (p.values[v].alias_of >= 0) views_of[p.values[v].alias_of].push_back(v);
    }
  }

  // Sample s's message on channel c has tag s x channels + c: every tag must be one MPI takes.
  void check_tags() const {
    if (samples == 1) return;
    void* bound = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &bound, &found);
    const int64_t highest = static_cast<int64_t>(samples) * tables.channel_count - 1;
    if (found && highest > *static_cast<int*>(bound)) {
      throw Error(fmt::format(
          "the program's {} samples x {} channels take MPI tags up to {}, above this MPI's "
          "MPI_TAG_UB {}; generate it for fewer samples",
          samples, tables.channel_count, highest, *static_cast<int*>(bound)));
    }
  }

  std::chrono::steady_clock::time_point deadline() const { return deadline_after(timeout); }
  // Which message of the stream a sample's value is: the run's samples one after another.
  int64_t stream_position(int sample) const { return run * samples + sample; }

  Buffer& buffer(int c, int slot) {
    return *messages.at(static_cast<std::size_t>(c)).at(static_cast<std::size_t>(slot));
  }
  MPI_Request& request(int c, int slot) {
    return requests.at(static_cast<std::size_t>(c)).at(static_cast<std::size_t>(slot));
  }

  // The views of value v (Reshape, Flatten outputs) follow its bytes, where this rank has
  // made them and they hold no message of their own.
  void follow_views(int v) {
    for (int view : views_of[static_cast<std::size_t>(v)]) {
      Tensor& tensor = program.value(view);
      if (on_message[static_cast<std::size_t>(view)] || tensor.raw() == nullptr) continue;
      const std::optional<dnnl::memory::desc> layout = tensor.layout();
      tensor = Tensor::borrow(tensor.dtype(), tensor.shape(), program.value(v).raw());
      tensor.set_layout(layout);
      follow_views(view);
    }
  }

  // A value this rank computes again goes back to where its step writes it.
  void restore(int v) {
    if (!on_message[static_cast<std::size_t>(v)]) return;
    on_message[static_cast<std::size_t>(v)] = false;
    Tensor& tensor = program.value(v);
    tensor = home[static_cast<std::size_t>(v)];
    const int root = tables.program->values[v].alias_of;
    if (root >= 0 && tensor.raw() != nullptr) {
      const std::optional<dnnl::memory::desc> layout = tensor.layout();
      tensor = Tensor::borrow(tensor.dtype(), tensor.shape(), program.value(root).raw());
      tensor.set_layout(layout);
    }
    follow_views(v);
  }

  // The tensor message c's value of `sample` is sent from: a stream's graph input is the run's.
  Tensor sent_value(int c, int sample) {
    const int v = tables.channels[c].value;
    const StaticProgramTables& p = *tables.program;
    if (samples > 1 && p.values[v].kind == StaticValue::kGraphInput) {
      for (int i = 0; i < p.graph_input_count; ++i) {
        if (p.graph_inputs[i] != v) continue;
        const StaticValue& value = p.values[v];
        return Tensor::borrow(static_cast<DataType>(value.dtype),
                              std::vector<int64_t>(value.dims, value.dims + value.rank),
                              inputs[static_cast<std::size_t>(sample) * p.graph_input_count + i]);
      }
    }
    return program.value(v);
  }
};

RankProgram::RankProgram(const RankProgramTables& tables, const std::string& weights_path,
                         MPI_Comm comm, double rank_timeout_seconds)
    : impl_(std::make_unique<Impl>(tables, weights_path, comm, rank_timeout_seconds)) {}

RankProgram::~RankProgram() = default;

MPI_Comm RankProgram::comm() const {
  return impl_->comm;
}

void RankProgram::step(int index) {
  Impl& s = *impl_;
  if (s.samples > 1) {
    const StaticStep& entry = s.tables.program->steps[index];
    for (int i = entry.outputs_begin; i < entry.outputs_end; ++i)
      s.restore(s.tables.program->step_values[i]);
  }
  s.program.step(index);
}

void* RankProgram::message(int c, int slot) {
  return impl_->buffer(c, slot).data();
}

int RankProgram::capacity(int c) const {
  return static_cast<int>(impl_->buffer(c, 0).size());
}

MPI_Request* RankProgram::request(int c, int slot) {
  return &impl_->request(c, slot);
}

int RankProgram::pack(int c, int slot, int sample) {
  Impl& s = *impl_;
  const MessageExpectation& expect = s.expectations[static_cast<std::size_t>(c)];
  const Tensor value = s.sent_value(c, sample);
  if (value.shape() != expect.shape || value.dtype() != expect.dtype) {
    throw Error(fmt::format("{} came out as {}, not the {}[{}] the program sends", expect.what,
                            value.describe(), dtype_name(expect.dtype),
                            fmt::join(expect.shape, ",")));
  }
  MessageHeader header = make_header(c, s.stream_position(sample), value.dtype(), value.shape());
  Buffer& message = s.buffer(c, slot);
  std::byte* buffer = message.data();
  if (value.is_blocked()) {
    // Sent in the producer's layout, as the MPI executor does: the consumer then reads the
    // same bytes as in one process, so the results stay bitwise equal.
    header.blocked = 1;
    header.payload_bytes = value.byte_size();
    std::memcpy(buffer + sizeof header, &value.layout()->data, sizeof(dnnl_memory_desc_t));
  }
  const std::size_t bytes = kMessagePrefixBytes + header.payload_bytes;
  if (bytes > message.size()) {
    throw Error(fmt::format("{} takes {} bytes, more than its message buffer", expect.what,
                            header.payload_bytes));
  }
  std::memcpy(buffer, &header, sizeof header);
  std::memcpy(buffer + kMessagePrefixBytes, value.raw(), header.payload_bytes);
  return static_cast<int>(bytes);
}

void RankProgram::check(int code, int c, const char* call) {
  if (code == MPI_SUCCESS) return;
  throw Error(fmt::format("{} of {} failed: {}", call,
                          impl_->expectations.at(static_cast<std::size_t>(c)).what,
                          mpi_error_text(code)));
}

void RankProgram::wait_receive(int c, int slot, int sample) {
  Impl& s = *impl_;
  const MessageExpectation& channel_expect = s.expectations[static_cast<std::size_t>(c)];
  MPI_Status status = wait_until(
      s.request(c, slot), s.deadline(),
      [&] {
        return s.samples > 1
                   ? fmt::format("{} (run {}, sample {})", channel_expect.what, s.run, sample)
                   : fmt::format("{} (run {})", channel_expect.what, s.run);
      },
      s.timeout);
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  const std::byte* buffer = s.buffer(c, slot).data();
  MessageHeader header;
  std::memcpy(&header, buffer, sizeof header);
  dnnl_memory_desc_t layout{};
  std::memcpy(&layout, buffer + sizeof header, sizeof layout);
  MessageExpectation expect = channel_expect;
  expect.run = s.stream_position(sample);
  const std::optional<dnnl::memory::desc> blocked =
      check_message(header, static_cast<std::size_t>(std::max(count, 0)), expect, &layout);
  const int v = s.tables.channels[c].value;
  Tensor& value = s.program.value(v);
  if (s.samples > 1 && !s.on_message[static_cast<std::size_t>(v)]) {
    s.home[static_cast<std::size_t>(v)] = value;
    s.on_message[static_cast<std::size_t>(v)] = true;
  }
  value = Tensor::borrow(expect.dtype, expect.shape, buffer + kMessagePrefixBytes);
  value.set_layout(blocked);
  if (s.samples > 1) s.follow_views(v);
}

void RankProgram::wait_send(int c, int slot) {
  Impl& s = *impl_;
  const MessageExpectation& expect = s.expectations[static_cast<std::size_t>(c)];
  wait_until(
      s.request(c, slot), s.deadline(),
      [&] {
        return fmt::format("rank {} to take {} (run {})", s.tables.channels[c].to, expect.what,
                           s.run);
      },
      s.timeout);
}

void RankProgram::use_inputs(int sample) {
  Impl& s = *impl_;
  s.program.set_inputs(s.inputs +
                       static_cast<std::size_t>(sample) *
                           static_cast<std::size_t>(s.tables.program->graph_input_count));
}

void RankProgram::take_output(int index, int sample) {
  Impl& s = *impl_;
  const std::size_t outputs = static_cast<std::size_t>(s.tables.program->graph_output_count);
  s.program.get_output(
      index,
      s.outputs[static_cast<std::size_t>(sample) * outputs + static_cast<std::size_t>(index)]);
  s.sample_seconds.at(static_cast<std::size_t>(sample)) =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
}

const std::vector<double>& RankProgram::sample_seconds() const {
  return impl_->sample_seconds;
}

void RankProgram::run(const void* const* inputs, void* const* outputs) {
  Impl& s = *impl_;
  ++s.run;
  if (s.samples > 1) {
    // The generated function copies each sample's inputs in and outputs out itself.
    s.start = std::chrono::steady_clock::now();
    if (s.rank == 0) s.sample_seconds.assign(static_cast<std::size_t>(s.samples), 0.0);
    s.inputs = inputs;
    s.outputs = outputs;
    s.program.run_worker_here(s.rank, [&] { s.tables.rank_functions[s.rank](*this); });
    return;
  }
  if (s.rank == 0) s.program.set_inputs(inputs);
  s.program.run_worker_here(s.rank, [&] { s.tables.rank_functions[s.rank](*this); });
  if (s.rank == 0) s.program.get_outputs(outputs);
}

namespace {

// Loads this rank's program, or says why not (every rank learns it before any work starts).
struct RankStart {
  std::unique_ptr<RankProgram> program;
  std::vector<std::vector<Tensor>> inputs, outputs;  // Rank 0: per sample.
  std::string failure;
};

RankStart start_rank(const RankProgramTables& tables, const ProgramMainOptions& options,
                     const MpiSession& session) {
  RankStart start;
  try {
    const StaticProgramTables& p = *tables.program;
    if (session.size() != p.workers) {
      throw Error(
          fmt::format("the program was generated for {} ranks, {} were started (mpirun "
                      "-np {})",
                      p.workers, session.size(), p.workers));
    }
    start.program = std::make_unique<RankProgram>(
        tables, options.weights.empty() ? default_weights_path(p) : options.weights, session.comm(),
        options.rank_timeout);
    if (session.rank() == 0) {
      // Sample s of a stream gets seed S + s, as under `cleave run --samples N`.
      for (int sample = 0; sample < std::max(1, tables.samples); ++sample) {
        ProgramMainOptions seeded = options;
        seeded.seed = options.seed + static_cast<uint64_t>(sample);
        start.inputs.push_back(program_inputs(p, seeded));
        start.outputs.push_back(program_output_buffers(p));
      }
    }
  } catch (const std::exception& e) {
    start.failure = e.what();
  }
  return start;
}

int run_ranks(const RankProgramTables& tables, const ProgramMainOptions& options,
              const MpiSession& session) {
  const std::size_t baseline_rss = process_peak_rss_bytes();
  RankStart start = start_rank(tables, options, session);
  if (!agree_to_start_or_say_why(session, start.failure, hash_text(tables.program->graph_text),
                                 options.rank_timeout)) {
    return 1;
  }
  std::vector<const void*> input_pointers;
  std::vector<void*> output_pointers;
  for (const std::vector<Tensor>& sample : start.inputs) {
    for (const Tensor& input : sample) input_pointers.push_back(input.raw());
  }
  for (std::vector<Tensor>& sample : start.outputs) {
    for (Tensor& output : sample) output_pointers.push_back(output.raw());
  }
  std::vector<double> latencies;
  try {
    for (int i = 0; i < options.warmup + options.repeat; ++i) {
      const auto begin = std::chrono::steady_clock::now();
      start.program->run(input_pointers.data(), output_pointers.data());
      if (i >= options.warmup) {
        latencies.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                .count());
      }
    }
  } catch (const std::exception& e) {
    abort_ranks(session.comm(), session.rank(), e.what());
  }
  // Every rank's peak, for the report: one fixed-size gather.
  RankFigures mine;
  mine.peak_rss_bytes = static_cast<double>(process_peak_rss_bytes());
  const std::string host = session.host();
  std::strncpy(mine.host, host.c_str(), sizeof mine.host - 1);
  const std::vector<RankFigures> all = gather_figures(session, mine, options.rank_timeout);
  if (session.rank() != 0) return 0;
  nlohmann::json per_rank = nlohmann::json::array();
  for (const RankFigures& figures : all) {
    per_rank.push_back({{"host", figures.host},
                        {"peak_rss_bytes", static_cast<std::size_t>(figures.peak_rss_bytes)}});
  }
  nlohmann::json extra = {{"ranks", session.size()}, {"per_rank", per_rank}};
  if (tables.samples > 1)
    extra["sample_latency_ms"] = sample_latency_json(start.program->sample_seconds());
  return report_program_run(*tables.program, options, start.outputs.front(), latencies,
                            baseline_rss, extra, start.outputs);
}

}  // namespace

int rank_program_main(const RankProgramTables& tables, int argc, char** argv) {
  apply_default_wait_policy(argv);
  const std::string name = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "model";
  ProgramMainOptions options;
  try {
    bool help = false;
    options = parse_program_options(argc, argv, /*ranks=*/true, help);
    if (help) {
      fmt::print("{}", program_usage(name, true));
      return 0;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
  try {
    MpiSession session;
    return run_ranks(tables, options, session);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace cleave
