// The runtime of a generated rank program: one worker of the plan per MPI rank, messages between.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen_runtime/static_program.h"

namespace cleave {

class RankProgram;

/// One value crossing ranks, once per run for each sample it carries; its message for sample s
/// has MPI tag s x channel count + its index.
struct RankChannel {
  int value;  ///< Index into the value table.
  int from;   ///< Sending rank.
  int to;     ///< Receiving rank.
  int slots;  ///< Message buffers on each end, used in turn by the channel's samples.
};

using RankFunction = void (*)(RankProgram&);

/// What the generator fixed for a rank program, beside the static program's tables.
struct RankProgramTables {
  const StaticProgramTables* program;  ///< Its workers are the ranks.
  const RankChannel* channels;
  int channel_count;
  const RankFunction* rank_functions;  ///< One per rank.
  int samples;  ///< Samples per run: a stream through the ranks when above 1.
};

/// This rank's part of a generated rank program: the static program's arena, weights and
/// steps, one message buffer per channel (a checked cleave message: header, oneDNN layout for
/// a blocked value, payload), and MPI requests. The generated rank function posts receives
/// with MPI_Irecv when a run starts, sends with MPI_Isend as soon as a value exists, and waits
/// for a receive only before the first step that reads it. A program of several samples runs
/// them all in one run, each rank its steps sample after sample; rank 0 copies each sample's
/// inputs in (use_inputs) and its outputs out (take_output) as the generated code says.
class RankProgram {
 public:
  /// Maps the weights (every rank maps the same file; only its steps' pages are read).
  /// Throws Error when the ranks started are not the plan's.
  RankProgram(const RankProgramTables& tables, const std::string& weights_path, MPI_Comm comm,
              double rank_timeout_seconds);
  ~RankProgram();
  RankProgram(const RankProgram&) = delete;
  RankProgram& operator=(const RankProgram&) = delete;

  /// One run of every rank. On rank 0, `inputs` and `outputs` are the graph's (graph order,
  /// outputs plain), sample after sample for a program of several samples; other ranks pass
  /// nullptr. Throws Error (or RankTimeout, mpi_session.h) naming the step, channel or peer.
  void run(const void* const* inputs, void* const* outputs);
  /// Rank 0 of a stream, per sample of the last run: seconds from its start until the
  /// sample's last output was copied out (take_output); empty on other ranks.
  const std::vector<double>& sample_seconds() const;

  // Called from the generated rank functions. `slot` picks one of a channel's message buffers;
  // the forms without it are a one-sample program's (slot and sample 0).
  MPI_Comm comm() const;
  /// Runs step `index`; in a stream, its outputs first go back to their arena places where a
  /// received sample's message held them.
  void step(int index);
  /// Channel `c`'s message buffer and the bytes a receive may take.
  void* message(int c, int slot = 0);
  int capacity(int c) const;
  MPI_Request* request(int c, int slot = 0);
  /// Writes the header and the value's bytes of `sample` into the message buffer; returns its
  /// size. A graph input of a stream is read from the run's inputs of that sample.
  int pack(int c, int slot = 0, int sample = 0);
  /// Throws Error naming the channel when an MPI call returned `code` other than success.
  void check(int code, int c, const char* call);
  /// Waits (bounded by the rank timeout) for channel c's message of `sample`, checks it against
  /// the plan (channel, run and sample, type, shape, size) and makes the value a view of its
  /// payload (and, in a stream, the views of the value with it).
  void wait_receive(int c, int slot = 0, int sample = 0);
  /// Waits (bounded) until the send from channel c's buffer has completed, so it may be reused.
  void wait_send(int c, int slot = 0);
  /// Rank 0 of a stream: copies `sample`'s graph inputs into the arena.
  void use_inputs(int sample);
  /// Rank 0 of a stream: copies graph output `index` out (plain) as `sample`'s.
  void take_output(int index, int sample);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The executable's main under mpirun: `cleave run`'s options, rank 0 reads the inputs and
/// reports; a rank that cannot start refuses on every rank, one that fails while running stops
/// the job (MPI_Abort) naming itself. Returns the exit code.
int rank_program_main(const RankProgramTables& tables, int argc, char** argv);

}  // namespace cleave
