// Schema checks on import: a misspelt attribute or an extra input must not run silently.
#include "onnx/schema_check.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace cleave {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string_view type_name(onnx::AttributeProto::AttributeType type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      return "a float";
    case onnx::AttributeProto::INT:
      return "an int";
    case onnx::AttributeProto::STRING:
      return "a string";
    case onnx::AttributeProto::TENSOR:
      return "a tensor";
    case onnx::AttributeProto::GRAPH:
      return "a graph";
    case onnx::AttributeProto::SPARSE_TENSOR:
      return "a sparse tensor";
    case onnx::AttributeProto::TYPE_PROTO:
      return "a type";
    case onnx::AttributeProto::FLOATS:
      return "a list of floats";
    case onnx::AttributeProto::INTS:
      return "a list of ints";
    case onnx::AttributeProto::STRINGS:
      return "a list of strings";
    case onnx::AttributeProto::TENSORS:
      return "a list of tensors";
    case onnx::AttributeProto::GRAPHS:
      return "a list of graphs";
    case onnx::AttributeProto::SPARSE_TENSORS:
      return "a list of sparse tensors";
    case onnx::AttributeProto::TYPE_PROTOS:
      return "a list of types";
    default:
      return "undefined";
  }
}

std::string range_text(int minimum, int maximum) {
  if (minimum == maximum) return fmt::format("{}", minimum);
  if (maximum == std::numeric_limits<int>::max()) return fmt::format("at least {}", minimum);
  return fmt::format("{} to {}", minimum, maximum);
}

class SchemaChecker {
 public:
  SchemaChecker(const onnx::ModelProto& model, std::string origin) : origin_(std::move(origin)) {
    for (const auto& function : model.functions()) {
      local_functions_.emplace(function.domain(), function.name());
    }
  }

  void check_opset(const onnx::ModelProto& model) {
    const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    const auto [lowest, highest] = ranges.at("");
    for (const auto& opset : model.opset_import()) {
      if (opset.domain() != "" && opset.domain() != "ai.onnx") continue;
      if (opset.version() < lowest || opset.version() > highest) {
        throw Error(fmt::format(
            "{}: opset_import: the standard domain's opset {} is outside what ONNX {} knows "
            "({} to {})",
            origin_, opset.version(), "1.12", lowest, highest));
      }
      opset_ = static_cast<int>(opset.version());
    }
  }

  void check_graph(const onnx::GraphProto& graph, const std::string& where) {
    for (int index = 0; index < graph.node_size(); ++index) {
      const onnx::NodeProto& node = graph.node(index);
      const std::string label = node.name().empty()
                                    ? fmt::format("#{} ({})", index, node.op_type())
                                    : fmt::format("'{}' ({})", node.name(), node.op_type());
      if (node.domain().empty() || node.domain() == "ai.onnx") check_node(node, where, label);
      // The importer has refused bodies nested deeper than its limit before this runs.
      for (const auto& attribute : node.attribute()) {
        const std::string inner =
            fmt::format("{}: node {}: attribute '{}'", where, label, attribute.name());
        if (attribute.has_g()) check_graph(attribute.g(), inner);
        for (int body = 0; body < attribute.graphs_size(); ++body) {
          check_graph(attribute.graphs(body), fmt::format("{}[{}]", inner, body));
        }
      }
    }
  }

 private:
  void check_node(const onnx::NodeProto& node, const std::string& where, const std::string& label) {
    if (local_functions_.count({node.domain(), node.op_type()})) return;
    if (opset_ == 0) {
      throw Error(fmt::format(
          "{}: node {}: the model uses the standard ONNX domain but its opset_import has no "
          "entry for it; expected one (e.g. version 13)",
          where, label));
    }
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset_, "");
    if (!schema) {
      throw Error(fmt::format("{}: node {}: '{}' is not an ONNX operator at opset {}", where, label,
                              node.op_type(), opset_));
    }
    const auto fail = [&](const std::string& problem) {
      throw Error(fmt::format("{}: node {}: {} (ONNX {} at opset {}, version {} of the operator)",
                              where, label, problem, node.op_type(), opset_,
                              schema->SinceVersion()));
    };
    if (node.input_size() < schema->min_input() || node.input_size() > schema->max_input()) {
      fail(fmt::format("has {} inputs, expected {}", node.input_size(),
                       range_text(schema->min_input(), schema->max_input())));
    }
    if (node.output_size() < schema->min_output() || node.output_size() > schema->max_output()) {
      fail(fmt::format("has {} outputs, expected {}", node.output_size(),
                       range_text(schema->min_output(), schema->max_output())));
    }
    const auto& known = schema->attributes();
    for (const auto& attribute : node.attribute()) {
      const auto found = known.find(attribute.name());
      if (found == known.end()) {
        // Some schemas accept attributes they do not list; ONNX's own check knows which.
        if (schema_accepts(*schema, node)) continue;
        std::vector<std::string> names;
        for (const auto& [name, unused] : known) names.push_back(name);
        const std::string closest = closest_name(attribute.name(), names);
        fail(fmt::format("unknown attribute '{}'{}; expected one of: {}", attribute.name(),
                         closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest),
                         names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
      }
      if (attribute.type() != onnx::AttributeProto::UNDEFINED &&
          attribute.type() != found->second.type) {
        fail(fmt::format("attribute '{}' is {}, expected {}", attribute.name(),
                         type_name(attribute.type()), type_name(found->second.type)));
      }
    }
    for (const auto& [known_name, definition] : known) {
      if (!definition.required) continue;
      // A copy: clang 14 cannot capture a structured binding in a lambda.
      const std::string& name = known_name;
      const bool given = std::any_of(node.attribute().begin(), node.attribute().end(),
                                     [&](const auto& a) { return a.name() == name; });
      if (!given) fail(fmt::format("required attribute '{}' is missing", name));
    }
    // What is left (an empty name for a required input, a value of the wrong field) is
    // ONNX's own check's to find.
    try {
      schema->Verify(node);
    } catch (const onnx::checker::ValidationError& e) {
      fail(e.what());
    }
  }

  static bool schema_accepts(const onnx::OpSchema& schema, const onnx::NodeProto& node) {
    try {
      schema.Verify(node);
      return true;
    } catch (const onnx::checker::ValidationError&) {
      return false;
    }
  }

  std::string origin_;
  int opset_ = 0;
  std::set<std::pair<std::string, std::string>> local_functions_;
};

}  // namespace

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, name.size() / 2) + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

void check_schemas(const onnx::ModelProto& model, const std::string& origin) {
  SchemaChecker checker(model, origin);
  checker.check_opset(model);
  checker.check_graph(model.graph(), origin);
}

}  // namespace cleave
