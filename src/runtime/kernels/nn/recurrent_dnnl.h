// RNN, GRU and LSTM nodes on oneDNN's RNN primitives, with weights packed once at preparation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/kernel.h"

namespace cleave {

/// The three recurrent ops of ONNX.
enum class RecurrentCell { kRnn, kGru, kLstm };

/// Sizes of an RNN, GRU or LSTM node, as the plain loops (recurrent.cc) checked them.
struct RecurrentDims {
  RecurrentCell cell = RecurrentCell::kRnn;
  bool linear_before_reset = false;
  bool reverse = false;      ///< direction="reverse".
  bool batch_major = false;  ///< layout=1: [batch, seq, ...] rather than [seq, batch, ...].
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, directions = 1;
};

/// The float outputs of a recurrent node with `outputs` outputs: Y, [steps, directions, batch,
/// hidden] (batch-major: [batch, steps, directions, hidden]), then the final states, [directions,
/// batch, hidden] (batch-major: [batch, directions, hidden]).
std::vector<OutputSpec> recurrent_output_specs(const RecurrentDims& dims, std::size_t outputs);

/// Why oneDNN's primitive cannot compute the node (empty when it can): it knows only the default
/// activations without clipping, and weights fixed before the run.
std::string dnnl_recurrent_blocker(const KernelContext& context, const RecurrentDims& dims);

/// The node on oneDNN's vanilla_rnn, lbr_gru, gru or lstm primitive (forward, reverse or
/// bidirectional, initial states, peepholes), or nullptr where the node needs what the
/// primitive lacks: clip, activations other than the defaults (RNN: one of Tanh, Relu, Sigmoid
/// for every direction), input_forget, sequence lengths shorter than the sequence in a reverse
/// pass or with the final cell state read (forward, they cut the full run), weights that are
/// not constants. The kernel is prepared again when sequence lengths it cannot take come.
std::unique_ptr<Kernel> create_dnnl_recurrent(const KernelContext& context,
                                              const RecurrentDims& dims);

}  // namespace cleave
