// `mpirun -np N cleave run-split DIR`: each rank runs its machine's steps of a spatial split.
#pragma once

#include <string>
#include <vector>

namespace cleave {

struct SplitRunSettings {
  std::string folder;               ///< Written by `cleave split`.
  std::vector<std::string> inputs;  ///< name=file.npy; others get seeded random values.
  uint64_t seed = 0;
  std::string model;  ///< Optional: the model split, checked against the manifest's fingerprint.
  std::string output_dir;
  int warmup = 0;
  int repeat = 1;
  int threads = 1;  ///< Intra-op threads per rank asked for.
  /// Keep `threads` whatever the load; else the ranks of a host share the cores other processes
  /// leave free (rank_threads_for, runtime/wait_policy.h).
  bool fixed_threads = false;
  /// How the sub-models' convolutions compute: blocked, winograd or channels-last. The family
  /// one process picks for the whole model sped up a VGG-style split and cost ResNet-50's
  /// memory for no time (docs/results/distributed.md), so the default is blocked.
  std::string layouts = "blocked";
  bool json = false;
  std::string trace_file;
  double rank_timeout_seconds = 60;
};

/// Runs machine `rank`'s steps on every rank of MPI_COMM_WORLD: its sub-models with cleave's
/// executor, each send as one checked message posted with MPI_Isend when the step comes, each
/// receive posted with MPI_Irecv when the run starts and waited for at its step (bounded by
/// the rank timeout). A manifest that is malformed, names files outside DIR, was made from
/// another model than --model, or has a machine count other than the ranks is refused on every
/// rank before any work. Rank 0 reports and writes the outputs. Returns the exit code.
int run_split_on_ranks(const SplitRunSettings& settings);

}  // namespace cleave
