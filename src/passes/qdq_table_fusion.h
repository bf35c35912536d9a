// QDQ table fusion: an elementwise float chain from one DequantizeLinear (to a QuantizeLinear, or
// to floats other ops read) becomes a lookup of the 8-bit values in a 256-entry table.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Rewrites each per-tensor QuantizeLinear whose input an elementwise float chain computes from
/// one per-tensor DequantizeLinear'd 8-bit value (SiLU as x·Sigmoid(x), hardswish as
/// x·HardSigmoid(x), ...) into
///
///     y_q = com.cleave.ByteTable(x_q, table)      y_q[i] = table[byte of x_q[i]]
///
/// where `table` is the same chain (its nodes cloned, DequantizeLinear and QuantizeLinear too)
/// applied to a constant of the 256 values of x_q's type, in the order of their bytes; constant
/// folding then computes it once with the same kernels the chain ran on, so each output is the
/// one the chain gave.
///
/// The chain's nodes are Sigmoid, Tanh, HardSigmoid, Mul, Add, Sub, Relu, Neg and Clip, each
/// with inputs from the chain, the DequantizeLinear or one-element constants, every one read
/// only inside the chain or by the QuantizeLinear (no graph output). The value must hold at least
/// 256 elements (a static shape), so that each node's kernel takes the implementation the table's
/// 256 elements take (oneDNN's eltwise from 64 elements: elementwise.h), and the constants may
/// not raise its rank. Count: "elementwise chains fused into com.cleave.ByteTable".
///
/// Likewise a chain whose last float value other ops read (SiLU read by a squeeze-and-excitation's
/// pool and product), where its DequantizeLinear'd value is read only inside it: ByteTable with
/// a table of 256 floats writes that value, the DequantizeLinear and the chain go. Count:
/// "elementwise chains of float outputs fused into com.cleave.ByteTable".
PassResult fuse_qdq_tables(Graph& graph);

}  // namespace cleave
