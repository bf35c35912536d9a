// ONNX graph -> SSA instructions -> stream program (thesis ch. 4): split-joins from the
// graph's dominator structure, separators for unused outputs, replication where needed.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "stream/instructions.h"
#include "stream/stream_ir.h"

namespace cleave {

struct StreamConversion {
  Stream root;
  InstructionProgram instructions;
  int64_t live_instructions = 0;  ///< Live instructions that compute (no placeholders).
  int64_t filters = 0;            ///< Filters that run a graph node.
  /// Filters that repeat a node another filter already runs (fused-instruction replication,
  /// for graphs that are not series-parallel), and the FLOPs they repeat.
  int64_t replicated_filters = 0;
  int64_t replicated_flops = 0;
  int64_t total_flops = 0;  ///< FLOPs of one item through the graph, without replication.
  /// By reference: filters that read a published value instead of repeating its node, and
  /// the FLOPs replication would have repeated there.
  int64_t reference_readers = 0;
  int64_t referenced_flops = 0;
};

struct StreamConversionOptions {
  /// Keep a node that two split-joins share once and pass its value by reference (its filter
  /// publishes, the other places read) instead of replicating it.
  bool by_reference = false;
};

/// Converts a graph whose inputs and values have static shapes. Program input items are the
/// graph inputs, round robin in graph input order; output items the graph outputs likewise.
/// A value read by several instructions becomes a duplicate split-join closed by a
/// round-robin joiner in front of the instruction that joins the branches; several graph
/// inputs, and tuple outputs whose items go to different branches, become round-robin
/// split-joins; outputs nobody reads are dropped by separator filters; a node that two
/// split-joins share is replicated into each (and counted in replicated_*).
StreamConversion graph_to_stream(const Graph& graph, const std::string& name = "model");
StreamConversion graph_to_stream(const Graph& graph, const std::string& name,
                                 const StreamConversionOptions& options);

}  // namespace cleave
