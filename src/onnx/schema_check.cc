// Schema checks on import: a misspelt attribute or an extra input must not run silently.
#include "onnx/schema_check.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "support/error.h"

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

// A type with every element type set: ONNX's type names cannot spell an unknown one.
bool fully_typed(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      return type.tensor_type().elem_type() != 0;
    case onnx::TypeProto::kSparseTensorType:
      return type.sparse_tensor_type().elem_type() != 0;
    case onnx::TypeProto::kSequenceType:
      return type.sequence_type().has_elem_type() && fully_typed(type.sequence_type().elem_type());
    case onnx::TypeProto::kOptionalType:
      return type.optional_type().has_elem_type() && fully_typed(type.optional_type().elem_type());
    case onnx::TypeProto::kMapType:
      return type.map_type().key_type() != 0 && type.map_type().has_value_type() &&
             fully_typed(type.map_type().value_type());
    default:
      return false;
  }
}

std::string range_text(int minimum, int maximum) {
  if (minimum == maximum) return fmt::format("{}", minimum);
  if (maximum == std::numeric_limits<int>::max()) return fmt::format("at least {}", minimum);
  return fmt::format("{} to {}", minimum, maximum);
}

// ONNX's name of a value's type ("tensor(float)", "seq(tensor(int64))"), or null when the type
// is not known completely (inference could not type the value).
onnx::DataType onnx_type(const Value& value) {
  if (value.dtype != DataType::kUndefined) {
    static const std::vector<onnx::DataType> tensor_types = [] {
      std::vector<onnx::DataType> table(static_cast<std::size_t>(DataType::kBFloat16) + 1);
      for (std::size_t number = 1; number < table.size(); ++number) {
        onnx::TypeProto type;
        type.mutable_tensor_type()->set_elem_type(static_cast<int>(number));
        table[number] = onnx::Utils::DataTypeUtils::ToType(type);
      }
      return table;
    }();
    const auto number = static_cast<std::size_t>(value.dtype);
    return number < tensor_types.size() ? tensor_types[number] : nullptr;
  }
  if (!value.opaque_type) return nullptr;
  onnx::TypeProto type;
  if (!type.ParseFromString(value.opaque_type->serialized) || !fully_typed(type)) return nullptr;
  try {
    return onnx::Utils::DataTypeUtils::ToType(type);
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::string allowed_types(const onnx::DataTypeSet& types) {
  std::vector<std::string> names;
  for (onnx::DataType type : types) names.push_back(*type);
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

// What replaces the operators ONNX 1.12 deprecates.
std::string_view replacement(std::string_view op_type) {
  if (op_type == "Upsample") return "Resize";
  if (op_type == "Scatter") return "ScatterElements";
  return "";
}

class SchemaChecker {
 public:
  SchemaChecker(const onnx::ModelProto& model, std::string origin,
                const SchemaCheckOptions& options)
      : origin_(std::move(origin)), options_(options) {
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

  // `typed`, when given, is the import of `graph`: node i of one is node i of the other.
  void check_graph(const onnx::GraphProto& graph, const Graph* typed, const std::string& where) {
    for (int index = 0; index < graph.node_size(); ++index) {
      const onnx::NodeProto& node = graph.node(index);
      // Built only for a message: one string per node was a measurable part of a large import.
      const auto label = [&] {
        return node.name().empty() ? fmt::format("#{} ({})", index, node.op_type())
                                   : fmt::format("'{}' ({})", node.name(), node.op_type());
      };
      // The importer adds node i of the proto as node i of the graph.
      const Node* imported = typed && static_cast<std::size_t>(index) < typed->node_capacity()
                                 ? &typed->node(index)
                                 : nullptr;
      if (imported && imported->op_type != node.op_type()) imported = nullptr;
      if (node.domain().empty() || node.domain() == "ai.onnx") {
        check_node(node, typed, imported ? index : -1, where, label);
      } else if (!options_.other_domains &&
                 !(options_.runs_domain_op &&
                   options_.runs_domain_op(node.domain(), node.op_type()))) {
        refuse_domain(node, where, label());
      }
      // The importer has refused bodies nested deeper than its limit before this runs.
      for (int slot = 0; slot < node.attribute_size(); ++slot) {
        const onnx::AttributeProto& attribute = node.attribute(slot);
        if (!attribute.has_g() && attribute.graphs_size() == 0) continue;
        const Attribute* bodies =
            imported && static_cast<std::size_t>(slot) < imported->attributes.size()
                ? &imported->attributes[slot].second
                : nullptr;
        const std::string inner =
            fmt::format("{}: node {}: attribute '{}'", where, label(), attribute.name());
        if (attribute.has_g()) {
          check_graph(attribute.g(), bodies && bodies->g ? bodies->g.get() : nullptr, inner);
        }
        for (int body = 0; body < attribute.graphs_size(); ++body) {
          const Graph* typed_body = bodies && static_cast<std::size_t>(body) < bodies->graphs.size()
                                        ? bodies->graphs[body].get()
                                        : nullptr;
          check_graph(attribute.graphs(body), typed_body, fmt::format("{}[{}]", inner, body));
        }
      }
    }
  }

 private:
  template <typename Label>
  void check_node(const onnx::NodeProto& node, const Graph* typed, NodeId id,
                  const std::string& where, const Label& label) {
    if (!local_functions_.empty() && local_functions_.count({node.domain(), node.op_type()})) {
      return;
    }
    if (opset_ == 0) {
      throw Error(fmt::format(
          "{}: node {}: the model uses the standard ONNX domain but its opset_import has no "
          "entry for it; expected one (e.g. version 13)",
          where, label()));
    }
    const onnx::OpSchema* schema = schema_for(node.op_type());
    if (!schema) {
      throw Error(fmt::format("{}: node {}: '{}' is not an ONNX operator at opset {}", where,
                              label(), node.op_type(), opset_));
    }
    const auto fail = [&](const std::string& problem) {
      throw Error(fmt::format("{}: node {}: {} (ONNX {} at opset {}, version {} of the operator)",
                              where, label(), problem, node.op_type(), opset_,
                              schema->SinceVersion()));
    };
    if (schema->Deprecated()) {
      const std::string_view instead = replacement(node.op_type());
      const std::string older = fmt::format("opset {} or lower", schema->SinceVersion() - 1);
      fail(fmt::format(
          "'{}' is deprecated since opset {} (ONNX Runtime refuses it too); expected {}",
          node.op_type(), schema->SinceVersion(),
          instead.empty() ? older : fmt::format("{} instead, or {}", instead, older)));
    }
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
    if (id >= 0) check_types(*schema, *typed, typed->node(id), fail);
  }

  // As ONNX's OpSchema::CheckInputOutputType (which ONNX Runtime's strict inference applies):
  // each typed input and output must have a type its formal parameter allows, and every
  // homogeneous parameter of one type variable the same type. Messages are built only on
  // failure: this runs for every node of a model.
  template <typename Fail>
  void check_types(const onnx::OpSchema& schema, const Graph& graph, const Node& node,
                   const Fail& fail) {
    const auto describe = [&](const Use& use) {
      return fmt::format("{} {} ('{}', {} '{}')", use.side, use.slot, graph.value(use.value).name,
                         use.formal->GetName(), use.formal->GetTypeStr());
    };
    std::vector<Binding>& bound = bindings_;
    bound.clear();
    const auto check = [&](const std::vector<onnx::OpSchema::FormalParameter>& formals,
                           const std::vector<ValueId>& values, const char* side) {
      if (formals.empty()) return;
      for (std::size_t slot = 0; slot < values.size(); ++slot) {
        if (values[slot] == kNoValue) continue;
        const onnx::DataType type = onnx_type(graph.value(values[slot]));
        if (!type) continue;
        const Use use{side, slot, values[slot],
                      slot < formals.size() ? &formals[slot] : &formals.back()};
        if (!use.formal->GetTypes().count(type)) {
          fail(fmt::format("{} is {}; expected one of: {}", describe(use), *type,
                           allowed_types(use.formal->GetTypes())));
        }
        if (!use.formal->GetIsHomogeneous()) continue;
        const std::string& variable = use.formal->GetTypeStr();
        const auto first = std::find_if(bound.begin(), bound.end(),
                                        [&](const auto& b) { return *std::get<0>(b) == variable; });
        if (first == bound.end()) {
          bound.emplace_back(&variable, use, type);
        } else if (std::get<2>(*first) != type) {
          fail(fmt::format("{} is {}, but {} is {}; expected one type for '{}'", describe(use),
                           *type, describe(std::get<1>(*first)), *std::get<2>(*first), variable));
        }
      }
    };
    check(schema.inputs(), node.inputs, "input");
    // A Constant's output has its value's type: Constant-1 lists only float types, yet the
    // exporters of that era wrote int64 constants with it (ONNX's pytorch-converted backend
    // cases), and ONNX's inference and runtimes take the value's type as it is.
    if (node.op_type != "Constant") check(schema.outputs(), node.outputs, "output");
  }

  // ONNX Runtime refuses what it has no kernel for; cleave's kernels are the standard domain's.
  void refuse_domain(const onnx::NodeProto& node, const std::string& where,
                     const std::string& label) {
    const bool local = local_functions_.count({node.domain(), node.op_type()}) > 0;
    throw UnsupportedError(fmt::format(
        "{}: node {}: {} of domain '{}' is not supported: cleave runs the operators of the "
        "standard ONNX domain (ai.onnx, opsets 1 to {}) and, of com.microsoft's, those its own "
        "graph passes write{}",
        where, label, local ? "the model-local function" : "the operator", node.domain(),
        onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second,
        local ? ", and does not inline model-local functions" : ""));
  }

  // One registry search per operator type, not per node.
  const onnx::OpSchema* schema_for(const std::string& op_type) {
    const auto [found, added] = schemas_.try_emplace(op_type, nullptr);
    if (added) found->second = onnx::OpSchemaRegistry::Schema(op_type, opset_, "");
    return found->second;
  }

  static bool schema_accepts(const onnx::OpSchema& schema, const onnx::NodeProto& node) {
    try {
      schema.Verify(node);
      return true;
    } catch (const onnx::checker::ValidationError&) {
      return false;
    }
  }

  struct Use {
    const char* side;
    std::size_t slot;
    ValueId value;
    const onnx::OpSchema::FormalParameter* formal;
  };
  // A type variable, its first use, and the type that use binds it to.
  using Binding = std::tuple<const std::string*, Use, onnx::DataType>;

  std::string origin_;
  SchemaCheckOptions options_;
  std::vector<Binding> bindings_;  // check_types' scratch, kept to reuse its memory
  int opset_ = 0;
  std::set<std::pair<std::string, std::string>> local_functions_;
  std::unordered_map<std::string, const onnx::OpSchema*> schemas_;
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

void check_schemas(const onnx::ModelProto& model, const std::string& origin,
                   const SchemaCheckOptions& options) {
  SchemaChecker checker(model, origin, options);
  checker.check_opset(model);
  checker.check_graph(model.graph(), options.types, origin);
}

}  // namespace cleave
