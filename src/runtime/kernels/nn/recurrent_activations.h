// The activations of RNN, GRU and LSTM nodes by name, with their alpha and beta: one reading for
// the loops that run them and the generators that write them out.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernels/nn/recurrent_dnnl.h"

namespace cleave {

/// One gate function of a recurrent node: an ONNX name ("Sigmoid", "LeakyRelu", ...) and the
/// alpha and beta it applies (0 where it takes none).
struct RecurrentActivation {
  std::string name;
  float alpha = 0.0f, beta = 0.0f;
};

/// The node's gate functions, per direction (forward first): f for RNN, f and g for GRU, f, g
/// and h for LSTM, from `activations` or the defaults (Tanh; Sigmoid, Tanh; Sigmoid, Tanh,
/// Tanh). `activation_alpha` and `activation_beta` are consumed in order by the functions that
/// take them (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu), as ONNX
/// Runtime reads them; a function left without one takes its ONNX operator's default. Throws
/// Error naming `where` for a name outside ONNX's list or a count that is not one set per
/// direction.
std::vector<RecurrentActivation> recurrent_activations(const Node& node, RecurrentCell cell,
                                                       int64_t directions,
                                                       const std::string& where);

/// Functions per direction: 1 (RNN), 2 (GRU), 3 (LSTM).
std::size_t recurrent_functions_per_direction(RecurrentCell cell);

/// The function itself, in double.
std::function<double(double)> recurrent_activation_function(const RecurrentActivation& a);

}  // namespace cleave
