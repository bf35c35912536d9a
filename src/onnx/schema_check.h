// Checking standard-domain nodes against ONNX's own operator schemas, as onnx's checker does.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <vector>

namespace cleave {

/// Checks `model` against the operator schemas ONNX ships (onnx::OpSchemaRegistry): the
/// standard domain's opset must be one ONNX knows, and every node of the standard domain (in
/// nested bodies too) must name an operator that exists at that opset, with input and output
/// counts in the schema's range, only attributes the schema defines, of the schema's types,
/// and every required attribute. Throws Error naming `origin`, the node and the expectation;
/// an unknown attribute is reported with the closest valid name.
void check_schemas(const onnx::ModelProto& model, const std::string& origin);

/// The candidate closest to `name` by edit distance ("" when none is within half its length).
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace cleave
