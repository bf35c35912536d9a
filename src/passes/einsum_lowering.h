// Einsum lowering: a two-operand contraction becomes Transposes around one MatMul.
#pragma once

#include "ir/graph.h"
#include "passes/pass.h"

namespace cleave {

/// Rewrites each float Einsum of two operands whose equation (letters only, explicit or implicit
/// output) is a batched matrix product: every letter is a batch letter (both operands and the
/// output), the one row letter (the first operand and the output), the one column letter (the
/// second operand and the output) or the one contracted letter (both operands only). The
/// operands are transposed to [batch..., row, contracted] and [batch..., contracted, column],
/// multiplied by a MatMul (oneDNN's, where Einsum's kernel is a plain loop), and the product is
/// transposed to the output's order; identity transposes are left out. Attention in MaxViT
/// ("bghid,bghjd->bghij" and "bghij,bghjd->bghid") is this case. Other equations keep their
/// Einsum. Count: "Einsums lowered to MatMul".
PassResult lower_einsums(Graph& graph);

}  // namespace cleave
