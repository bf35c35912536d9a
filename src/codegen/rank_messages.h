// The messages of a generated rank program: which values cross ranks for which samples, and
// each rank's MPI calls around its steps.
#pragma once

#include <string>
#include <vector>

#include "codegen/program_layout.h"
#include "codegen/worker_program.h"
#include "ir/graph.h"

namespace cleave {

/// Receives a rank keeps posted ahead per value between ranks (as MpiOptions::window): while it
/// computes one sample, the next sample's message may arrive.
inline constexpr int kRankMessageWindow = 2;

/// One value sent from one rank to another: graph inputs rank 0 sends, values read on another
/// rank than their producer's, outputs computed away from rank 0. Message j of the channel
/// carries sample `samples[j]` with MPI tag samples[j] * channel count + channel index.
struct MessageChannel {
  ValueId value = kNoValue;
  int from = 0;
  int to = 0;
  std::vector<int> samples;  ///< The samples whose value it carries, ascending.
  /// Message buffers on each end: one per sample for rank 0's inputs and outputs (all posted
  /// when a run starts), else up to kRankMessageWindow, reused in turn.
  int slots = 1;
  bool per_sample = false;  ///< Rank 0's inputs and outputs: one buffer per sample.
};

/// Every channel of the program, in the order values come to exist in sample 0, then the
/// channels only later samples use (a data-parallel plan's samples on other ranks). With
/// `rank_zero_io` (ranks) rank 0 hands out the graph inputs and gathers the outputs; without
/// (worker threads, each of which reads its samples' inputs and writes their outputs) only
/// values computed on one worker and read on another cross.
std::vector<MessageChannel> list_message_channels(const Graph& graph, const WorkerProgram& program,
                                                  bool rank_zero_io = true);

/// Messages a rank receives and sends in one run.
struct RankMessageCounts {
  std::size_t received = 0;
  std::size_t sent = 0;
};

/// Rank r's function body: its receives posted when the run starts, its steps in the plan's
/// order (with several samples, a loop over the rank's samples whose body is one sample's steps
/// and messages, buffers and tags computed from the sample: worker_samples), each receive waited
/// for just before the first step that reads it, each send as soon as its value exists, a buffer's
/// next receive posted once its sample's steps are done, and the sends completed at the end. With
/// several samples rank 0 also copies in each sample's inputs (p.use_inputs) and copies out each
/// output (p.take_output).
std::string rank_body(const Graph& graph, const WorkerProgram& program, const ProgramLayout& layout,
                      const std::vector<MessageChannel>& channels, int r,
                      RankMessageCounts& counts);

}  // namespace cleave
