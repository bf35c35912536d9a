// Checking standard-domain nodes against ONNX's own operator schemas, as onnx's checker does.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace cleave {

struct SchemaCheckOptions {
  /// The import of the model (same nodes, same order, bodies in the same attributes): the
  /// element types of its values, declared or inferred, are checked against each schema's type
  /// constraints. Null checks structure only.
  const Graph* types = nullptr;
  /// Leaves nodes of other domains than the standard one unchecked instead of refusing them
  /// (cleave has no kernel for any): for tools that only read or rewrite a model.
  bool other_domains = false;
  /// Nodes of other domains for which this answers true are left unchecked (a kernel runs
  /// them), the rest refused; ImportOptions::runs_domain_op.
  std::function<bool(const std::string& domain, const std::string& op_type)> runs_domain_op;
};

/// Checks `model` against the operator schemas ONNX ships (onnx::OpSchemaRegistry), as onnx's
/// checker and ONNX Runtime do: the standard domain's opset must be one ONNX knows, and every
/// node (in nested bodies too) must be of the standard domain (UnsupportedError otherwise) and
/// name an operator that exists and is not deprecated at that opset, with input and output
/// counts in the schema's range, only attributes the schema defines, of the schema's types,
/// every required attribute, and (with `options.types`) input and output element types that
/// the schema's type constraints allow, one type per type variable. Throws Error naming
/// `origin`, the node and the expectation; an unknown attribute is reported with the closest
/// valid name.
void check_schemas(const onnx::ModelProto& model, const std::string& origin,
                   const SchemaCheckOptions& options = {});

/// The candidate closest to `name` by edit distance ("" when none is within half its length).
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace cleave
