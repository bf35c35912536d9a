// `mpirun -np N cleave run-split DIR`: a spatial split on ranks, one rank per machine.
#pragma once

#include <cstdint>
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
  /// Samples streamed through the ranks per repeat (each rank starting the next sample's part
  /// while the others work on earlier ones, as `mpirun cleave run --samples`).
  int samples = 1;
  int threads = 1;  ///< Intra-op threads per rank asked for.
  /// Keep `threads` whatever the load; else the ranks of a host share the cores other processes
  /// leave free (rank_threads_for, runtime/wait_policy.h).
  bool fixed_threads = false;
  /// How the split's convolutions compute: blocked, winograd or channels-last. The family
  /// one process picks for the whole model sped up a VGG-style split and cost ResNet-50's
  /// memory for no time (docs/results/distributed.md), so the default is blocked.
  std::string layouts = "blocked";
  bool json = false;
  std::string trace_file;
  double rank_timeout_seconds = 60;
};

/// Runs the split on every rank of MPI_COMM_WORLD as one plan: DIR/partitioned.onnx with
/// DIR/plan.json (one worker per machine) on the rank driver (run_plan_on_ranks), rank r
/// running machine r's nodes, each value another machine reads (the regions the manifest
/// lists) one checked message. A manifest that is malformed, names files outside DIR, was made
/// from another model than --model, has a machine count other than the ranks, or disagrees with
/// the partitioned graph is refused on every rank before any work. With `samples` > 1 the
/// samples stream through the ranks (sample s's random inputs seeded with seed + s, as `cleave
/// run --samples`; --input files are every sample's) and the report gives the throughput. Rank
/// 0 reports and writes the first sample's outputs. The per-machine sub-models in DIR are an export
/// format; no rank reads them. Returns the exit code.
int run_split_on_ranks(const SplitRunSettings& settings);

}  // namespace cleave
