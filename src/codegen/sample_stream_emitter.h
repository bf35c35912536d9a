// The C++ generator for a plan of several samples on worker threads: a loop over each worker's
// samples, values between workers double-buffered.
#pragma once

#include "codegen/cpp_emitter.h"
#include "codegen/worker_program.h"
#include "ir/graph.h"
#include "support/atomic_output.h"

namespace cleave {

/// Writes the worker-thread program of `graph` run by `program` (program.samples > 1:
/// pipelined stages, data-parallel or sequential over a stream) into `out`: worker_N.cc per
/// worker (a loop over the worker's samples, worker_samples, whose body is one sample's steps:
/// `p.use_inputs(s)` where it reads the graph inputs, `p.receive(c, slot, s)` before the first
/// step reading a value another worker computes, `p.send(c, slot, s)` as soon as a value another
/// worker reads exists, `p.take_output(o, s)` after a graph output's step), tables.cc,
/// program.h, main.cc, model.h and model_api.cc (a run takes every sample), CMakeLists.txt,
/// README.md and weights.bin. Each worker runs its own instance of the program
/// (codegen_runtime/sample_stream.h), so the outputs of sample s are bit-identical to `cleave
/// run --plan plan.json --seed S+s`'s. Summary as emit_cpp's (channels: values between
/// workers per run).
CppCodegenSummary emit_sample_stream_cpp(const Graph& graph, const WorkerProgram& program,
                                         const CppCodegenOptions& options, AtomicFolder& out);

}  // namespace cleave
