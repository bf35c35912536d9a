// GRU and LSTM nodes on oneDNN's RNN primitives, with weights packed once at preparation.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/kernel.h"

namespace cleave {

/// Sizes of a GRU or LSTM node, as the plain loops (recurrent.cc) checked them.
struct RecurrentDims {
  bool lstm = false;  ///< LSTM; else GRU.
  bool linear_before_reset = false;
  bool reverse = false;  ///< direction="reverse".
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, directions = 1;
};

/// The node on oneDNN's lbr_gru, gru or lstm primitive (forward, reverse or bidirectional,
/// initial states, peepholes), or nullptr where the node needs what the primitive lacks: clip,
/// activations other than the defaults, input_forget, layout=1, sequence lengths that differ
/// from the sequence's, weights that are not constants. The kernel is prepared again when the
/// sequence lengths' values change.
std::unique_ptr<Kernel> create_dnnl_recurrent(const KernelContext& context,
                                              const RecurrentDims& dims);

}  // namespace cleave
