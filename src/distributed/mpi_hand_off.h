// Hand-off of values between MPI ranks: sends posted as values appear, receives posted per run.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "distributed/fault_injection.h"
#include "distributed/mpi_routes.h"
#include "runtime/buffer_pool.h"
#include "runtime/executor_interface.h"
#include "runtime/kernel.h"
#include "runtime/value_hand_off.h"

namespace cleave {

/// Message traffic of this rank since the last reset, headers included.
struct Traffic {
  double bytes_sent = 0;
  double bytes_received = 0;
  int64_t messages_sent = 0;
  int64_t messages_received = 0;
  /// Values received straight into their Concat's output (ReceivePlace), and their bytes.
  int64_t received_in_place = 0;
  double bytes_received_in_place = 0;
};

/// Where a value from another rank is received: `bytes` at `offset` of `buffer` (its slice of a
/// Concat's output, task_concat_placement.h), in `spec`'s layout, instead of a buffer of its own.
struct ReceivePlace {
  std::shared_ptr<Buffer> buffer;
  std::size_t offset = 0;
  OutputSpec spec;
};

/// ValueHandOff across ranks (runtime/value_hand_off.h): publish() hands a task's outputs to
/// later tasks of this rank in place and sends those that other ranks read, one checked message
/// each (MPI_Isend, completed later), its header from a buffer of its own and its payload
/// straight from the value's bytes (one derived datatype: the value is never copied, however
/// many ranks read it, and is held until the send completes); begin_run() posts every receive
/// of the run (MPI_Irecv into a buffer of the size the plan says, or, for a ReceivePlace, its
/// payload into the place); await() waits for a remote task's messages only when a task needs
/// them. Several runs may be in flight at once (a pipelined stream); all calls come from the
/// rank's one MPI thread.
class MpiHandOff : public ValueHandOff {
 public:
  /// `worker[t]` is the rank that runs task t; `outputs[t]` its node's output count.
  MpiHandOff(const MpiRoutes& routes, std::vector<int> worker, std::vector<int> outputs,
             MPI_Comm comm, int rank, FaultInjection fault);
  ~MpiHandOff() override;

  void begin_run(int64_t run) override;
  /// As begin_run(run), the values of the channels in `places` received into their places.
  void begin_run(int64_t run, const std::map<int, ReceivePlace>& places);
  void publish(int task, int64_t run, const std::vector<Tensor>& outputs) override;
  /// For a task of another rank, waits (at most `timeout_seconds`) for its messages to this
  /// rank, checks each against the plan (Error naming the value and the mismatch) and points
  /// `*outputs` at them (outputs no task here reads are empty tensors).
  Wait await(int task, int64_t run, double timeout_seconds,
             const std::vector<Tensor>** outputs) override;
  void stop() override;

  /// Rank 0: sends the graph inputs other ranks read, `samples` being run `run`'s samples.
  void publish_inputs(int64_t run, std::span<const SampleInputs> samples);
  /// A graph input of `sample` sent by rank 0, as await().
  Wait await_input(ValueId value, int sample, int64_t run, double timeout_seconds,
                   const Tensor** tensor) override;
  /// Whether every message of a remote task's outputs to this rank has come (tests, no wait).
  bool arrived(int task, int64_t run);
  /// Completes the sends that have finished; those of runs up to `until_run` are waited for
  /// (RankTimeout after `timeout_seconds`, naming the rank that does not take them).
  void finish_sends(int64_t until_run, double timeout_seconds);
  /// After this rank's tasks of `run`: lets go of received values, except graph outputs on
  /// rank 0, so their buffers serve the next run.
  void end_tasks(int64_t run);
  /// Forgets `run` (every receive of it has completed).
  void end_run(int64_t run);

  const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = Traffic(); }
  /// The type, shape and layout of the first value that came on `channel` to this rank; null
  /// before one came.
  const OutputSpec* arrived_spec(int channel) const;

 private:
  struct Receive {
    MPI_Request request = MPI_REQUEST_NULL;
    std::shared_ptr<Buffer> buffer;  // The whole message, or (placed) its header and overflow.
    std::optional<ReceivePlace> place;
    MPI_Datatype type = MPI_DATATYPE_NULL;  // Placed: header, place, overflow.
    Tensor value;
    bool done = false;
  };
  struct RunState {
    std::vector<Receive> receives;              // Per receive slot.
    std::map<int, std::vector<Tensor>> remote;  // Remote task -> its outputs here.
  };
  struct PendingSend {
    int64_t run = 0;
    int channel = -1;
    MPI_Request request = MPI_REQUEST_NULL;
    std::shared_ptr<Buffer> header;  // Header and layout.
    Tensor value;                    // Holds the payload's bytes until the send completes.
  };

  void send(int channel, int64_t run, const Tensor& value);
  RunState& state_of(int64_t run);
  void accept(int64_t run, Receive& receive, int channel, const MPI_Status& status);
  bool wait_for(int64_t run, int channel, double timeout_seconds);
  bool test(int64_t run, int channel);
  void cancel(RunState& state);

  const MpiRoutes& routes_;
  std::vector<int> worker_;
  std::vector<int> outputs_;
  MPI_Comm comm_;
  int rank_;
  FaultInjection fault_;
  std::vector<int> receive_channels_;  // Channels to this rank, in channel order.
  std::vector<int> receive_slot_;      // Per channel: index in receive_channels_, or -1.
  std::set<int> kept_;                 // Rank 0: channels that carry graph outputs.
  std::vector<std::optional<OutputSpec>> arrived_;  // Per channel: its first value here.
  std::vector<const std::vector<Tensor>*> local_;   // Per task of this rank: its published outputs.
  std::vector<int64_t> local_run_;                  // ... of this run (-1: none yet).
  std::map<int64_t, RunState> runs_;
  std::deque<PendingSend> sends_;
  BufferPool pool_;
  Traffic traffic_;
  bool stopped_ = false;
};

}  // namespace cleave
