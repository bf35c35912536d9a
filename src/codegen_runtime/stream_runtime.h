// The small runtime a generated stream program links against: rings, built-in work, its main.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen_runtime/static_program.h"

namespace cleave {

/// One channel of a generated stream program: `capacity` fixed-size item slots (the static
/// schedule's buffer size), used as a FIFO ring. A channel whose items differ in type (a
/// model's conversion joins values of several shapes) has slots of its largest item and
/// `sizes`, each slot's item bytes. Overflow, underflow or an item too large for its slot
/// throws Error naming the channel (a schedule that does not fit its buffers: a generator
/// bug, never silent).
struct StreamRing {
  const char* name;
  std::byte* data;
  int64_t capacity;
  int64_t item_bytes;        ///< Slot bytes: every item's, or the largest (mixed rings).
  int64_t* sizes = nullptr;  ///< Mixed rings: per slot, its item's bytes.
  int64_t head = 0;
  int64_t count = 0;

  std::byte* peek(int64_t i) const;
  /// Bytes of the i-th item held.
  int64_t bytes(int64_t i) const;
  std::byte* push_slot() { return push_slot(item_bytes); }
  /// The next slot, for an item of `bytes` (a fixed ring takes only its item size).
  std::byte* push_slot(int64_t bytes);
  void pop(int64_t n);
  int64_t room() const { return capacity - count; }
};

/// Built-in work functions (see FilterOp; splitters and joiners of split-joins).
void stream_identity(StreamRing& in, StreamRing& out, int64_t n);
void stream_slice(StreamRing& in, StreamRing& out, int64_t pop, int64_t begin, int64_t push);
void stream_separator(StreamRing& in, StreamRing& out, int64_t pop, const int64_t* indices,
                      int64_t count);
void stream_concat(StreamRing& in, StreamRing& out, int64_t pop, int64_t outer);
void stream_duplicate(StreamRing& in, StreamRing* const* outs, int count);
void stream_round_robin_split(StreamRing& in, StreamRing* const* outs, const int64_t* weights,
                              int count);
void stream_join(StreamRing* const* ins, const int64_t* weights, int count, StreamRing& out);

/// A model filter: its generated StaticProgram and the buffers of one firing. fire() copies
/// the window of `peek` items into the model's inputs (`peek / inputs` items each), runs it,
/// cuts each output into `push / outputs` items and pops `pop` items.
class StreamModelFilter {
 public:
  StreamModelFilter(const StaticProgramTables& tables, const std::string& weights_path);
  void fire(StreamRing& in, StreamRing& out, int64_t pop, int64_t peek, int64_t push);

 private:
  StaticProgram program_;
  std::vector<std::vector<std::byte>> inputs_, outputs_;
  std::vector<const void*> input_pointers_;
  std::vector<void*> output_pointers_;
};

/// What the generator fixed for one stream program.
struct StreamProgramTables {
  const char* name;
  StreamRing* const* rings;  ///< Every channel, emptied before each run.
  int ring_count;
  StreamRing* input;   ///< The program input channel.
  StreamRing* output;  ///< The program output channel.
  int64_t input_for_init;
  int64_t input_per_iteration;
  int input_dtype;  ///< ONNX element type of the input items.
  int input_rank;
  const int64_t* input_dims;
  int output_dtype;
  int output_rank;
  const int64_t* output_dims;
  void (*start)(const std::string& folder);  ///< Loads the model filters (weights in folder).
  void (*init)();                            ///< The init schedule.
  void (*steady_state)();                    ///< One steady-state iteration.
  bool (*drain)();  ///< Fires what can fire once around; false when nothing could.
};

/// The executable's main: `--input NAME=F.npy` (items along the leading axis), `--items N`,
/// `--output-dir D` (output.npy, the items stacked, as `cleave stream run` writes),
/// `--repeat R`, `--json`. Returns the exit code; errors print "NAME: error: ..." and return 1.
int stream_program_main(const StreamProgramTables& tables, int argc, char** argv);

}  // namespace cleave
