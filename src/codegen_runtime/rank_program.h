// The runtime of a generated rank program: one worker of the plan per MPI rank, messages between.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "codegen_runtime/static_program.h"

namespace cleave {

class RankProgram;

/// One value crossing ranks once per run; its index is the MPI tag.
struct RankChannel {
  int value;  ///< Index into the value table.
  int from;   ///< Sending rank.
  int to;     ///< Receiving rank.
};

using RankFunction = void (*)(RankProgram&);

/// What the generator fixed for a rank program, beside the static program's tables.
struct RankProgramTables {
  const StaticProgramTables* program;  ///< Its workers are the ranks.
  const RankChannel* channels;
  int channel_count;
  const RankFunction* rank_functions;  ///< One per rank.
};

/// This rank's part of a generated rank program: the static program's arena, weights and
/// steps, one message buffer per channel (a checked cleave message: header, oneDNN layout for
/// a blocked value, payload), and MPI requests. The generated rank function posts receives
/// with MPI_Irecv when a run starts, sends with MPI_Isend as soon as a value exists, and waits
/// for a receive only before the first step that reads it.
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
  /// outputs plain); other ranks pass nullptr. Throws Error (or RankTimeout, mpi_session.h)
  /// naming the step, channel or peer.
  void run(const void* const* inputs, void* const* outputs);

  // Called from the generated rank functions.
  MPI_Comm comm() const;
  void step(int index);
  /// Channel `c`'s message buffer and the bytes a receive may take.
  void* message(int c);
  int capacity(int c) const;
  MPI_Request* request(int c);
  /// Writes the header and the value's bytes into the message buffer; returns its size.
  int pack(int c);
  /// Throws Error naming the channel when an MPI call returned `code` other than success.
  void check(int code, int c, const char* call);
  /// Waits (bounded by the rank timeout) for channel c's message, checks it against the plan
  /// (channel, run, type, shape, size) and makes the value a view of its payload.
  void wait_receive(int c);
  /// Waits (bounded) until channel c's send has completed, so its buffer may be reused.
  void wait_send(int c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The executable's main under mpirun: `cleave run`'s options, rank 0 reads the inputs and
/// reports; a rank that cannot start refuses on every rank, one that fails while running stops
/// the job (MPI_Abort) naming itself. Returns the exit code.
int rank_program_main(const RankProgramTables& tables, int argc, char** argv);

}  // namespace cleave
