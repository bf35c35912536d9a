// MPI hand-off: checked messages, receives posted when a run starts, sends completed lazily.
#include "distributed/mpi_hand_off.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "distributed/mpi_session.h"
#include "runtime/executor.h"

namespace cleave {

namespace {

std::chrono::steady_clock::time_point deadline_in(double seconds) {
  using Clock = std::chrono::steady_clock;
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

struct Block {
  const void* address = nullptr;
  std::size_t bytes = 0;
};

// One message over blocks of memory anywhere (addressed from MPI_BOTTOM), so that MPI sends
// from or receives into them where they are instead of through one contiguous copy.
MPI_Datatype blocks_type(std::initializer_list<Block> blocks, const std::string& what) {
  std::vector<int> lengths;
  std::vector<MPI_Aint> addresses;
  for (const Block& block : blocks) {
    if (block.bytes == 0) continue;
    MPI_Aint address = 0;
    MPI_Get_address(block.address, &address);
    lengths.push_back(static_cast<int>(block.bytes));
    addresses.push_back(address);
  }
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int code = MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(),
                                      addresses.data(), MPI_BYTE, &type);
  if (code == MPI_SUCCESS) code = MPI_Type_commit(&type);
  if (code != MPI_SUCCESS) {
    throw Error(
        fmt::format("could not describe the message of {} to MPI: {}", what, mpi_error_text(code)));
  }
  return type;
}

std::size_t spec_bytes(const OutputSpec& spec) {
  return spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
}

}  // namespace

MpiHandOff::MpiHandOff(const MpiRoutes& routes, std::vector<int> worker, std::vector<int> outputs,
                       MPI_Comm comm, int rank, FaultInjection fault)
    : routes_(routes),
      worker_(std::move(worker)),
      outputs_(std::move(outputs)),
      comm_(comm),
      rank_(rank),
      fault_(std::move(fault)) {
  receive_slot_.assign(routes_.channels.size(), -1);
  for (std::size_t c = 0; c < routes_.channels.size(); ++c) {
    if (routes_.channels[c].to != rank_) continue;
    receive_slot_[c] = static_cast<int>(receive_channels_.size());
    receive_channels_.push_back(static_cast<int>(c));
  }
  if (rank_ == 0) {
    for (const auto& per_sample : routes_.outputs) {
      for (const OutputRoute& route : per_sample) {
        if (route.kind != OutputRoute::Kind::kTask || worker_[route.task] == 0) continue;
        for (int channel : routes_.task_to_rank.at({route.task, 0})) {
          if (routes_.channels[channel].output == route.output) kept_.insert(channel);
        }
      }
    }
  }
  local_.assign(worker_.size(), nullptr);
  local_run_.assign(worker_.size(), -1);
  arrived_.resize(routes_.channels.size());
}

MpiHandOff::~MpiHandOff() {
  for (auto& [run, state] : runs_) cancel(state);
}

void MpiHandOff::begin_run(int64_t run) {
  begin_run(run, {});
}

void MpiHandOff::begin_run(int64_t run, const std::map<int, ReceivePlace>& places) {
  stopped_ = false;
  RunState& state = runs_[run];
  state.receives.assign(receive_channels_.size(), Receive());
  for (std::size_t i = 0; i < receive_channels_.size(); ++i) {
    const Channel& channel = routes_.channels[receive_channels_[i]];
    const std::size_t capacity = payload_capacity(channel.expect.dtype, channel.expect.shape);
    Receive& receive = state.receives[i];
    int code = MPI_SUCCESS;
    const auto place = places.find(receive_channels_[i]);
    if (place == places.end()) {
      receive.buffer = pool_.acquire(kMessagePrefixBytes + capacity);
      code = MPI_Irecv(receive.buffer->data(), static_cast<int>(kMessagePrefixBytes + capacity),
                       MPI_BYTE, channel.from, receive_channels_[i], comm_, &receive.request);
    } else {
      // The payload lands in its place; whatever a wrong message holds beyond the planned
      // bytes (up to any layout's) lands after the header, so it is refused, not truncated.
      receive.place = place->second;
      const std::size_t bytes = spec_bytes(receive.place->spec);
      const std::size_t overflow = capacity > bytes ? capacity - bytes : 0;
      receive.buffer = pool_.acquire(kMessagePrefixBytes + overflow);
      receive.type = blocks_type({{receive.buffer->data(), kMessagePrefixBytes},
                                  {receive.place->buffer->data() + receive.place->offset, bytes},
                                  {receive.buffer->data() + kMessagePrefixBytes, overflow}},
                                 channel.expect.what);
      code = MPI_Irecv(MPI_BOTTOM, 1, receive.type, channel.from, receive_channels_[i], comm_,
                       &receive.request);
    }
    if (code != MPI_SUCCESS) {
      throw Error(fmt::format("could not post the receive of {}: {}", channel.expect.what,
                              mpi_error_text(code)));
    }
  }
}

MpiHandOff::RunState& MpiHandOff::state_of(int64_t run) {
  auto found = runs_.find(run);
  if (found == runs_.end()) throw Error(fmt::format("run {} has not begun on this rank", run));
  return found->second;
}

void MpiHandOff::publish(int task, int64_t run, const std::vector<Tensor>& outputs) {
  local_[task] = &outputs;
  local_run_[task] = run;
  for (std::size_t k = 0; k < routes_.sends[task].size() && k < outputs.size(); ++k) {
    // Sent in the producer's layout: its consumers all accept it (or it would be plain), and
    // reading it as they would in one process keeps the results bitwise equal.
    for (int channel : routes_.sends[task][k]) send(channel, run, outputs[k]);
  }
  finish_sends(-1, 0);
}

void MpiHandOff::publish_inputs(int64_t run, std::span<const SampleInputs> samples) {
  for (std::size_t channel = 0; channel < routes_.channels.size(); ++channel) {
    const Channel& c = routes_.channels[channel];
    if (c.producer < 0) send(static_cast<int>(channel), run, samples[c.sample].at(c.name));
  }
}

void MpiHandOff::send(int channel_index, int64_t run, const Tensor& value) {
  const Channel& channel = routes_.channels[channel_index];
  if (value.shape() != channel.expect.shape || value.dtype() != channel.expect.dtype) {
    throw Error(fmt::format("{} came out as {}, not the {}[{}] the plan sends", channel.expect.what,
                            value.describe(), dtype_name(channel.expect.dtype),
                            fmt::join(channel.expect.shape, ",")));
  }
  MessageHeader header = make_header(channel_index, run, value.dtype(), value.shape());
  if (value.is_blocked()) {
    header.blocked = 1;
    header.payload_bytes = value.byte_size();
  }
  std::size_t payload = header.payload_bytes;
  fault_.corrupt(header, payload);
  payload = std::min<std::size_t>(payload, value.byte_size());
  const std::size_t bytes = kMessagePrefixBytes + payload;
  PendingSend pending;
  pending.run = run;
  pending.channel = channel_index;
  pending.header = pool_.acquire(kMessagePrefixBytes);
  std::memcpy(pending.header->data(), &header, sizeof header);
  if (value.is_blocked()) {
    std::memcpy(pending.header->data() + sizeof header, &value.layout()->data,
                sizeof(dnnl_memory_desc_t));
  }
  // Every reading rank's message reads the value's own bytes: no copy, however many read it.
  pending.value = value;
  MPI_Datatype type = blocks_type(
      {{pending.header->data(), kMessagePrefixBytes}, {value.raw(), payload}}, channel.expect.what);
  int code = MPI_Isend(MPI_BOTTOM, 1, type, channel.to, channel_index, comm_, &pending.request);
  MPI_Type_free(&type);  // Freed once the send is done with it.
  if (code != MPI_SUCCESS) {
    throw Error(fmt::format("could not send {} to rank {}: {}", channel.expect.what, channel.to,
                            mpi_error_text(code)));
  }
  traffic_.bytes_sent += static_cast<double>(bytes);
  ++traffic_.messages_sent;
  sends_.push_back(std::move(pending));
}

void MpiHandOff::finish_sends(int64_t until_run, double timeout_seconds) {
  while (!sends_.empty()) {
    PendingSend& oldest = sends_.front();
    const Channel& channel = routes_.channels[oldest.channel];
    int done = 0;
    if (oldest.run <= until_run) {
      wait_until(
          oldest.request, deadline_in(timeout_seconds),
          [&] {
            return fmt::format("rank {} to take {} (run {})", channel.to, channel.expect.what,
                               oldest.run);
          },
          timeout_seconds);
      done = 1;
    } else {
      MPI_Status status{};
      int code = MPI_Test(&oldest.request, &done, &status);
      if (code != MPI_SUCCESS) {
        throw Error(fmt::format("MPI failed sending {} to rank {}: {}", channel.expect.what,
                                channel.to, mpi_error_text(code)));
      }
    }
    if (!done) break;
    sends_.pop_front();
  }
}

// Turns a completed receive into a tensor after checking it against the plan.
void MpiHandOff::accept(int64_t run, Receive& receive, int channel_index,
                        const MPI_Status& status) {
  const Channel& channel = routes_.channels[channel_index];
  int count = 0;
  if (receive.type != MPI_DATATYPE_NULL) {
    MPI_Get_elements(&status, receive.type, &count);  // Bytes, over all the blocks.
    MPI_Type_free(&receive.type);
  } else {
    MPI_Get_count(&status, MPI_BYTE, &count);
  }
  MessageHeader header;
  std::memcpy(&header, receive.buffer->data(),
              std::min<std::size_t>(sizeof header, receive.buffer->size()));
  MessageExpectation expect = channel.expect;
  expect.run = run;
  dnnl_memory_desc_t layout{};
  std::memcpy(&layout, receive.buffer->data() + sizeof header, sizeof layout);
  std::optional<dnnl::memory::desc> blocked =
      check_message(header, static_cast<std::size_t>(count), expect, &layout);
  if (receive.place) {
    const OutputSpec& planned = receive.place->spec;
    if (blocked.has_value() != planned.layout.has_value() ||
        (blocked && *blocked != *planned.layout)) {
      throw Error(fmt::format(
          "refused the message for {} (channel {}, run {}): it came in another layout than the "
          "first run's, for which its slice of a Concat's output was planned",
          expect.what, expect.channel, expect.run));
    }
    receive.value =
        Tensor::view(expect.dtype, expect.shape, receive.place->buffer, receive.place->offset);
    receive.place.reset();
    ++traffic_.received_in_place;
    traffic_.bytes_received_in_place += static_cast<double>(count - kMessagePrefixBytes);
  } else {
    receive.value = Tensor::view(expect.dtype, expect.shape, receive.buffer, kMessagePrefixBytes);
  }
  if (blocked) receive.value.set_layout(*blocked);
  if (!arrived_[channel_index])
    arrived_[channel_index] = OutputSpec{expect.dtype, expect.shape, blocked};
  receive.buffer.reset();
  receive.done = true;
  traffic_.bytes_received += count;
  ++traffic_.messages_received;
}

const OutputSpec* MpiHandOff::arrived_spec(int channel) const {
  const std::optional<OutputSpec>& spec = arrived_[static_cast<std::size_t>(channel)];
  return spec ? &*spec : nullptr;
}

bool MpiHandOff::wait_for(int64_t run, int channel, double timeout_seconds) {
  Receive& receive = state_of(run).receives[static_cast<std::size_t>(receive_slot_[channel])];
  if (receive.done) return true;
  MPI_Status status{};
  try {
    status = wait_until(
        receive.request, deadline_in(timeout_seconds),
        [&] { return routes_.channels[channel].expect.what; }, timeout_seconds);
  } catch (const RankTimeout&) {
    return false;
  }
  accept(run, receive, channel, status);
  return true;
}

bool MpiHandOff::test(int64_t run, int channel) {
  Receive& receive = state_of(run).receives[static_cast<std::size_t>(receive_slot_[channel])];
  if (receive.done) return true;
  int done = 0;
  MPI_Status status{};
  int code = MPI_Test(&receive.request, &done, &status);
  if (code != MPI_SUCCESS) {
    const Channel& c = routes_.channels[channel];
    throw Error(fmt::format("MPI failed while receiving {} from rank {}: {}", c.expect.what, c.from,
                            mpi_error_text(code)));
  }
  if (done) accept(run, receive, channel, status);
  return done != 0;
}

ValueHandOff::Wait MpiHandOff::await(int task, int64_t run, double timeout_seconds,
                                     const std::vector<Tensor>** outputs) {
  if (stopped_) return Wait::kStopped;
  if (worker_[task] == rank_) {
    if (local_run_[task] != run) {
      throw Error(fmt::format("task {} of run {} is read before it ran on this rank", task, run));
    }
    *outputs = local_[task];
    return Wait::kReady;
  }
  RunState& state = state_of(run);
  auto found = state.remote.find(task);
  if (found == state.remote.end()) {
    const std::vector<int>& channels = routes_.task_to_rank.at({task, rank_});
    for (int channel : channels) {
      if (!wait_for(run, channel, timeout_seconds)) return Wait::kTimedOut;
    }
    std::vector<Tensor> values(static_cast<std::size_t>(outputs_[task]));
    for (int channel : channels) {
      values[static_cast<std::size_t>(routes_.channels[channel].output)] =
          state.receives[static_cast<std::size_t>(receive_slot_[channel])].value;
    }
    found = state.remote.emplace(task, std::move(values)).first;
  }
  *outputs = &found->second;
  return Wait::kReady;
}

ValueHandOff::Wait MpiHandOff::await_input(ValueId value, int sample, int64_t run,
                                           double timeout_seconds, const Tensor** tensor) {
  if (stopped_) return Wait::kStopped;
  const int channel = routes_.input_to_rank.at({value, sample, rank_});
  if (!wait_for(run, channel, timeout_seconds)) return Wait::kTimedOut;
  *tensor = &state_of(run).receives[static_cast<std::size_t>(receive_slot_[channel])].value;
  return Wait::kReady;
}

bool MpiHandOff::arrived(int task, int64_t run) {
  bool all = true;
  for (int channel : routes_.task_to_rank.at({task, rank_})) all = test(run, channel) && all;
  return all;
}

void MpiHandOff::stop() {
  stopped_ = true;
}

void MpiHandOff::end_tasks(int64_t run) {
  RunState& state = state_of(run);
  state.remote.clear();
  for (std::size_t slot = 0; slot < state.receives.size(); ++slot) {
    if (!kept_.count(receive_channels_[slot])) state.receives[slot].value = Tensor();
  }
}

void MpiHandOff::end_run(int64_t run) {
  auto found = runs_.find(run);
  if (found == runs_.end()) return;
  cancel(found->second);
  runs_.erase(found);
}

void MpiHandOff::cancel(RunState& state) {
  // A receive still posted must not land in a buffer that is gone (MPI_Finalize would also
  // wait for it).
  for (Receive& receive : state.receives) {
    if (receive.request != MPI_REQUEST_NULL && !receive.done) {
      MPI_Cancel(&receive.request);
      MPI_Request_free(&receive.request);
    }
    if (receive.type != MPI_DATATYPE_NULL) MPI_Type_free(&receive.type);
  }
}

}  // namespace cleave
