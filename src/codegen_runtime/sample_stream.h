// The runtime of a generated worker-thread program of several samples: each worker its own
// program instance, values between workers handed off through double buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen_runtime/static_program.h"

namespace cleave {

class SampleStreamWorker;

/// One value crossing from one worker to another, once for each sample both run it in.
struct SampleStreamChannel {
  int value;  ///< Index into the value table.
  int from;   ///< Producing worker.
  int to;     ///< Reading worker.
  int slots;  ///< Buffers, used in turn by the channel's samples.
};

using SampleStreamFunction = void (*)(SampleStreamWorker&);

/// What the generator fixed for a worker-thread program of several samples.
struct SampleStreamTables {
  const StaticProgramTables* program;
  const SampleStreamChannel* channels;
  int channel_count;
  const SampleStreamFunction* worker_functions;  ///< One per worker.
  int samples;                                   ///< Samples per run.
};

/// The calls a generated worker function makes: its steps, its samples' inputs and outputs,
/// and the hand-offs with other workers.
class SampleStreamWorker {
 public:
  /// Runs step `index` on this worker's program instance.
  void step(int index);
  /// Copies `sample`'s graph inputs into this worker's arena.
  void use_inputs(int sample);
  /// Copies graph output `index` out (plain) as `sample`'s, and notes when the sample was done.
  void take_output(int index, int sample);
  /// Waits until buffer `slot` of channel c is free, then copies the value (with its layout)
  /// into it as `sample`'s and tells the reader.
  void send(int c, int slot, int sample);
  /// Waits for `sample`'s value in buffer `slot` of channel c, checks it is that sample's,
  /// copies it to where this worker's steps read it and frees the buffer.
  void receive(int c, int slot, int sample);

  struct Impl;  ///< The worker's place in its program (sample_stream.cc).
  explicit SampleStreamWorker(Impl* impl) : impl_(impl) {}

 private:
  Impl* impl_;
};

/// A generated worker-thread program of several samples at run time: one StaticProgram
/// instance per worker (its own arena and kernels, the weights mapped once per instance), worker
/// 0's generated function on the caller's thread and one pinned thread per other worker (the
/// same start and finish handshake as StaticProgram's workers), and per channel `slots` buffers,
/// each a value's bytes with a fill count and an empty count (the same ready flags: spin, then
/// futex). Folded onto one core (set_threads), the caller runs every worker's calls, recorded by
/// a dry pass over the generated functions, in one order and wakes no thread; onto more cores
/// than one but fewer than workers, the threads are not pinned and share that many
/// WorkerPermits (a worker waiting on a buffer sleeps without its permit).
class SampleStreamProgram {
 public:
  /// Throws Error naming the weights file (StaticProgram) when it is missing or of another size.
  SampleStreamProgram(const SampleStreamTables& tables, const std::string& weights_path);
  ~SampleStreamProgram();
  SampleStreamProgram(const SampleStreamProgram&) = delete;
  SampleStreamProgram& operator=(const SampleStreamProgram&) = delete;

  /// As StaticProgram::set_threads (fewer cores than workers folds them): before the first run
  /// only.
  void set_threads(const PlanThreads& threads);
  /// One run of every sample: inputs[s * inputs + i] is input i of sample s, outputs[s * outputs
  /// + o] output o of sample s (plain; null: not written). Throws Error naming the worker and
  /// step when one fails (the others stop at their next hand-off).
  void run(const void* const* inputs, void* const* outputs);
  /// Per sample of the last run: seconds from its start until the sample's last output was
  /// copied out.
  const std::vector<double>& sample_seconds() const;
  const SampleStreamTables& tables() const;

  struct Impl;  ///< The run's state, shared with the workers (sample_stream.cc).

 private:
  std::unique_ptr<Impl> impl_;
};

/// The generated executable's main: `cleave run`'s options (sample s's inputs not given are
/// `cleave run --seed S+s`'s), every sample's outputs as D/sample_K/NAME.npy and sample 0's as
/// D/NAME.npy, the stream's time per --repeat and each sample's latency in the report.
int sample_stream_main(const SampleStreamTables& tables, int argc, char** argv);

}  // namespace cleave
