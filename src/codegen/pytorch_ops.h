// ONNX node -> PyTorch source lines: the op table of the PyTorch generator.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// How the generated code names things: a value's Python expression (a local variable, or
/// `self.w_...` for an initializer).
using PythonName = std::function<std::string(ValueId)>;

/// Python statements computing `node`'s outputs from its inputs with torch and
/// torch.nn.functional, assigning each used output to name(output). Fused attributes that
/// cleave's passes add (a Conv's `activation` and `sum_input`, a MatMul's bias and
/// activation, a BatchNormalization's Relu) are written out as the ops they stand for. The int8
/// ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv, QLinearMatMul,
/// ConvInteger, MatMulInteger, com.microsoft.QGemm) compute their integer sums exactly in
/// float64 and requantize as cleave's kernels do; Resize becomes F.interpolate where its
/// coordinates are torch's.
/// Throws Error naming the node for an op (or attribute value) without a mapping.
std::vector<std::string> pytorch_lines(const Graph& graph, NodeId node, const PythonName& name);

/// Module-level Python functions that `lines` (every node's pytorch_lines) call, each defined
/// once: rnn_activation where a recurrent node's gate has an activation other than torch's
/// sigmoid and tanh. Empty when no line calls one.
std::string pytorch_helpers(const std::vector<std::vector<std::string>>& lines);

/// The op types pytorch_lines maps, for messages and docs.
std::vector<std::string> pytorch_op_types();

}  // namespace cleave
