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
  int64_t run = -1;
  std::vector<std::unique_ptr<Buffer>> messages;  // Per channel of this rank, else null.
  std::vector<MPI_Request> requests;
  std::vector<MessageExpectation> expectations;

  Impl(const RankProgramTables& t, const std::string& weights_path, MPI_Comm c, double seconds)
      : tables(t),
        program(*t.program, weights_path, /*worker_threads=*/false),
        comm(c),
        timeout(seconds) {
    MPI_Comm_rank(comm, &rank);
    const StaticProgramTables& p = *t.program;
    requests.assign(static_cast<std::size_t>(t.channel_count), MPI_REQUEST_NULL);
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
      messages[ch] = std::make_unique<Buffer>(kMessagePrefixBytes + payload);
    }
  }

  std::chrono::steady_clock::time_point deadline() const { return deadline_after(timeout); }
};

RankProgram::RankProgram(const RankProgramTables& tables, const std::string& weights_path,
                         MPI_Comm comm, double rank_timeout_seconds)
    : impl_(std::make_unique<Impl>(tables, weights_path, comm, rank_timeout_seconds)) {}

RankProgram::~RankProgram() = default;

MPI_Comm RankProgram::comm() const {
  return impl_->comm;
}

void RankProgram::step(int index) {
  impl_->program.step(index);
}

void* RankProgram::message(int c) {
  return impl_->messages.at(static_cast<std::size_t>(c))->data();
}

int RankProgram::capacity(int c) const {
  return static_cast<int>(impl_->messages.at(static_cast<std::size_t>(c))->size());
}

MPI_Request* RankProgram::request(int c) {
  return &impl_->requests.at(static_cast<std::size_t>(c));
}

int RankProgram::pack(int c) {
  Impl& s = *impl_;
  const MessageExpectation& expect = s.expectations[static_cast<std::size_t>(c)];
  const Tensor& value = s.program.value(s.tables.channels[c].value);
  if (value.shape() != expect.shape || value.dtype() != expect.dtype) {
    throw Error(fmt::format("{} came out as {}, not the {}[{}] the program sends", expect.what,
                            value.describe(), dtype_name(expect.dtype),
                            fmt::join(expect.shape, ",")));
  }
  MessageHeader header = make_header(c, s.run, value.dtype(), value.shape());
  std::byte* buffer = s.messages[static_cast<std::size_t>(c)]->data();
  if (value.is_blocked()) {
    // Sent in the producer's layout, as the MPI executor does: the consumer then reads the
    // same bytes as in one process, so the results stay bitwise equal.
    header.blocked = 1;
    header.payload_bytes = value.byte_size();
    std::memcpy(buffer + sizeof header, &value.layout()->data, sizeof(dnnl_memory_desc_t));
  }
  const std::size_t bytes = kMessagePrefixBytes + header.payload_bytes;
  if (bytes > s.messages[static_cast<std::size_t>(c)]->size()) {
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

void RankProgram::wait_receive(int c) {
  Impl& s = *impl_;
  const MessageExpectation& channel_expect = s.expectations[static_cast<std::size_t>(c)];
  MPI_Status status = wait_until(
      s.requests[static_cast<std::size_t>(c)], s.deadline(),
      [&] { return fmt::format("{} (run {})", channel_expect.what, s.run); }, s.timeout);
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  const std::byte* buffer = s.messages[static_cast<std::size_t>(c)]->data();
  MessageHeader header;
  std::memcpy(&header, buffer, sizeof header);
  dnnl_memory_desc_t layout{};
  std::memcpy(&layout, buffer + sizeof header, sizeof layout);
  MessageExpectation expect = channel_expect;
  expect.run = s.run;
  const std::optional<dnnl::memory::desc> blocked =
      check_message(header, static_cast<std::size_t>(std::max(count, 0)), expect, &layout);
  Tensor& value = s.program.value(s.tables.channels[c].value);
  value = Tensor::borrow(expect.dtype, expect.shape, buffer + kMessagePrefixBytes);
  value.set_layout(blocked);
}

void RankProgram::wait_send(int c) {
  Impl& s = *impl_;
  const MessageExpectation& expect = s.expectations[static_cast<std::size_t>(c)];
  wait_until(
      s.requests[static_cast<std::size_t>(c)], s.deadline(),
      [&] {
        return fmt::format("rank {} to take {} (run {})", s.tables.channels[c].to, expect.what,
                           s.run);
      },
      s.timeout);
}

void RankProgram::run(const void* const* inputs, void* const* outputs) {
  Impl& s = *impl_;
  ++s.run;
  if (s.rank == 0) s.program.set_inputs(inputs);
  s.program.run_worker_here(s.rank, [&] { s.tables.rank_functions[s.rank](*this); });
  if (s.rank == 0) s.program.get_outputs(outputs);
}

namespace {

// Loads this rank's program, or says why not (every rank learns it before any work starts).
struct RankStart {
  std::unique_ptr<RankProgram> program;
  std::vector<Tensor> inputs, outputs;
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
      start.inputs = program_inputs(p, options);
      start.outputs = program_output_buffers(p);
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
  for (const Tensor& input : start.inputs) input_pointers.push_back(input.raw());
  std::vector<void*> output_pointers;
  for (Tensor& output : start.outputs) output_pointers.push_back(output.raw());
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
  return report_program_run(*tables.program, options, start.outputs, latencies, baseline_rss,
                            {{"ranks", session.size()}, {"per_rank", per_rank}});
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
