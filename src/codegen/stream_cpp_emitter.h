// The C++ generator for stream programs: the static schedule unrolled over fixed ring buffers.
#pragma once

#include <cstdint>

#include "codegen/cpp_emitter.h"
#include "stream/stream_ir.h"
#include "support/atomic_output.h"

namespace cleave {

struct StreamCppSummary {
  int actors = 0;         ///< Filters, splitters and joiners.
  int model_filters = 0;  ///< Each generated as a static program of its own.
  int channels = 0;
  int64_t ring_bytes = 0;  ///< All ring buffers together.
  int mixed_channels = 0;  ///< Channels carrying items of several types.
  int64_t input_per_iteration = 0;
  int64_t output_per_iteration = 0;
};

/// Writes `program` as a C++ program into `out`: stream.cc (one ring buffer per channel, sized
/// by the static schedule; one fire function per actor, calling a built-in work function or
/// the model filter's generated static program; the init schedule and one steady-state
/// iteration as straight-line calls), filters/NAME/ (each model filter's tables and worker,
/// as `emit_cpp` writes them, `options`' layouts), NAME.weights.bin, CMakeLists.txt and
/// README.md. Model filters run with one thread, like `cleave stream run`. A channel whose
/// items differ in type (a model's conversion) gets slots of its largest item, each slot
/// recording its item's size. Throws Error naming the program for a program output of items
/// of several types, a concat of items of different types, or an input item type that cannot
/// be told from the first filter (declare its input_item).
StreamCppSummary emit_stream_cpp(const StreamProgram& program, const CppCodegenOptions& options,
                                 AtomicFolder& out);

}  // namespace cleave
