// The C++ generator for plans on MPI ranks: one source per rank, MPI calls between them.
#pragma once

#include "codegen/cpp_emitter.h"
#include "codegen/worker_program.h"
#include "ir/graph.h"
#include "support/atomic_output.h"

namespace cleave {

/// Writes the program of `graph` run by `program` with worker w on MPI rank w into `out`:
/// rank_N.cc per rank (the rank's steps in the plan's order; MPI_Irecv of every value it reads
/// from another rank posted when a run starts and waited on just before the first step that
/// reads it; MPI_Isend of every value another rank reads as soon as its step has run; rank 0
/// sends the graph inputs other ranks read and receives the outputs they compute), tables.cc,
/// program.h, main.cc (`mpirun -np N build/model_run ...`), CMakeLists.txt (finds MPI),
/// README.md and weights.bin. Each channel is one cleave message (distributed/message.h) and
/// checked as `mpirun ... cleave run --plan` checks it. A program of several samples
/// (program.samples > 1: pipelined stages, data-parallel) runs them all in one run, each rank
/// its steps sample after sample, messages tagged per sample (rank_messages.h). Summary as
/// emit_cpp's (channels: the messages of one run).
CppCodegenSummary emit_rank_cpp(const Graph& graph, const WorkerProgram& program,
                                const CppCodegenOptions& options, AtomicFolder& out);

}  // namespace cleave
