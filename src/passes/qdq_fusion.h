// QDQ fusion: DequantizeLinear → Conv/MatMul/Gemm/Add/MaxPool/Concat → QuantizeLinear becomes
// QLinearConv/QLinearMatMul/QLinearAdd/an 8-bit MaxPool/QLinearConcat, so that a QDQ int8 model
// runs on the int8 kernels, as ONNX Runtime's QDQ transformer does.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Rewrites each QuantizeLinear whose input is computed by a Conv (or a MatMul, a Gemm) from
/// DequantizeLinear'd values into the one QLinear op of ONNX that computes it in integers:
///
///     x_f = DequantizeLinear(x_q, x_scale, x_zero)          (per tensor)
///     w_f = DequantizeLinear(w_q, w_scale, w_zero)          (constant; per tensor or per
///                                                            output channel: Conv axis 0,
///                                                            MatMul the last axis)
///     y_f = Conv(x_f, w_f[, b])  [→ Relu]                   (each read only by the next)
///     y_q = QuantizeLinear(y_f, y_scale, y_zero)            (per tensor)
///   becomes
///     y_q = QLinearConv(x_q, x_scale, x_zero, w_q, w_scale, w_zero, y_scale, y_zero[, b_q])
///
/// The bias b is an int32 constant DequantizeLinear'd with scale x_scale·w_scale and zero point
/// 0 (how ONNX Runtime's quantizer writes it), whose int32 values are read as they are, or a
/// float constant, quantized here to that scale. A Relu before the QuantizeLinear fuses only
/// when y's zero point is its type's lowest value, where quantizing already clamps at 0. A
/// MatMul fuses when its weights are 2-D. A Gemm (transA 0, alpha and beta 1) becomes a
/// QLinearMatMul (its weights transposed into a new constant under transB), or with a bias
/// ONNX Runtime's com.microsoft QGemm (inputs A, a_scale, a_zero, B, b_scale, b_zero, C,
/// y_scale, y_zero), since ONNX has no int8 product with a bias. Scales and zero points must
/// be constants. Runs before constant folding, which would otherwise turn the weights' constant
/// DequantizeLinear into float weights. The DequantizeLinear nodes stay for other readers (dead
/// code otherwise).
///
/// Likewise an Add of two per-tensor DequantizeLinear'd values [→ Relu] → QuantizeLinear, all
/// of one 8-bit type, becomes ONNX Runtime's com.microsoft QLinearAdd (inputs a, a_scale,
/// a_zero, b, b_scale, b_zero, y_scale, y_zero), whose kernel rounds as ONNX Runtime's does.
///
/// A MaxPool between a DequantizeLinear and a QuantizeLinear of one per-tensor map (equal
/// scale and zero point, a positive scale, one 8-bit type) pools the 8-bit values instead:
/// exact, since the max commutes with an increasing map. A Concat of DequantizeLinear'd values
/// along the batch or the channels that only that MaxPool reads becomes the 8-bit concat below
/// under the pool's output map (each part's requantization is non-decreasing, so it commutes
/// with the max too), then the 8-bit pool. A Concat of per-tensor DequantizeLinear'd values of one
/// 8-bit type → QuantizeLinear becomes a Concat of the 8-bit values where every map is the
/// output's, else ONNX Runtime's com.microsoft QLinearConcat (inputs y_scale, y_zero, then x,
/// x_scale, x_zero per input), which requantizes each input as DequantizeLinear → QuantizeLinear
/// would.
///
/// Last, what stays in float between one DequantizeLinear and a QuantizeLinear, an elementwise
/// chain, becomes a 256-entry table lookup (fuse_qdq_tables, qdq_table_fusion.h).
///
/// Counts: "Conv nodes fused into QLinearConv", "MatMul nodes fused into QLinearMatMul", "Gemm
/// nodes fused into QLinearMatMul", "Gemm nodes fused into com.microsoft.QGemm", "Add nodes
/// fused into com.microsoft.QLinearAdd", "Relu nodes fused into a QLinear op", "MaxPool nodes
/// moved onto 8-bit values", "Concat nodes moved onto 8-bit values", "Concat nodes fused into
/// com.microsoft.QLinearConcat", and fuse_qdq_tables' count.
PassResult fuse_qdq(Graph& graph);

}  // namespace cleave
