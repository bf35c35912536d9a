// Cleave's fused node forms written back as the standard ONNX nodes they stand for.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

#include "ir/graph.h"

namespace cleave {

/// Rewrites the last node of `out`, just exported from graph.node(id), when it carries a form
/// cleave's passes make and ONNX does not define: a Conv's fused activation (`activation`,
/// `activation_min`, `activation_max`) and residual sum (`sum_input`), a BatchNormalization's
/// fused Relu, a MatMul's fused bias input and activation, and a LayerNormalization below opset
/// 17. The node keeps its standard part and the nodes that compute the rest follow it, the last
/// one writing the original output; the optimizer fuses them again on import. `names` holds
/// every value name in use and receives the new ones. Throws Error naming the node for a fused
/// form with no standard spelling (an unknown activation, a LayerNormalization of unknown rank).
void write_standard_form(const Graph& graph, NodeId id, int64_t opset, onnx::GraphProto& out,
                         std::set<std::string>& names);

}  // namespace cleave
