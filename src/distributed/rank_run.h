// `cleave run --plan` under mpirun: every rank loads, agrees, runs its part; rank 0 reports.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

struct RankRunSettings {
  std::string model;
  std::string plan;  ///< A plan file whose worker count equals the ranks started.
  std::vector<std::string> shapes;
  bool optimize = true;
  bool plain_layouts = false;
  std::string layouts = "auto";  ///< auto means blocked here: no rank measures on its own.
  int threads = 1;               ///< Intra-op threads per rank asked for.
  /// Keep `threads` whatever the load; else the ranks of a host share the cores other processes
  /// leave free (rank_threads_for, runtime/wait_policy.h).
  bool fixed_threads = false;
  int warmup = 0;
  int repeat = 1;
  int samples = 1;  ///< Inputs pushed through the ranks per repeat (a pipelined stream).
  bool json = false;
  std::string output_dir;
  std::vector<std::string> files_read;  ///< Model, plan, input files: no output replaces them.
  std::string trace_file;
  double rank_timeout_seconds = 60;
  /// Every rank reads the whole model (else, loaded as is, only its own tasks' weights).
  bool read_whole_model = false;
  /// Keep the loaded weights after the kernels packed them (MpiOptions::release_packed_weights).
  bool keep_loaded_weights = false;
  /// Rank 0's inputs of stream sample `sample` (--input files, else seeded random values).
  std::function<std::map<std::string, Tensor>(const Graph&, int sample)> inputs;
};

/// Runs the plan on the ranks of MPI_COMM_WORLD (initializing and finalizing MPI). A plan made
/// for another model, a worker count other than the ranks, or any rank failing to load is
/// refused on every rank before any work starts (Error). A rank that fails or times out while
/// running stops the whole job (MPI_Abort) with a message naming the rank and what it waited
/// for. Rank 0 prints the report and writes the outputs (atomically, after the last run).
/// Returns the exit code.
int run_on_ranks(const RankRunSettings& settings);

}  // namespace cleave
