// Printer of the graph text form (the parser is in text.cc).
#include "ir/text.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>

#include "ir/text_names.h"

namespace cleave {

namespace text_detail {

bool is_plain_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string name_token(std::string_view name) {
  bool plain = !name.empty();
  for (char c : name) plain = plain && is_plain_name_char(c);
  return plain ? std::string(name) : quote(name);
}

}  // namespace text_detail

namespace {

using text_detail::name_token;
using text_detail::quote;

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text = fmt::format("{}", static_cast<float>(value));
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string format_tensor_values(const TensorData& t) {
  std::vector<std::string> items;
  int64_t count = t.element_count();
  auto emit = [&](auto typed) {
    using T = decltype(typed);
    auto span = t.as<T>();
    for (int64_t i = 0; i < count && i < static_cast<int64_t>(span.size()); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        items.push_back(format_float(span[i]));
      } else {
        items.push_back(fmt::format("{}", static_cast<int64_t>(span[i])));
      }
    }
  };
  switch (t.dtype) {
    case DataType::kFloat:
      emit(float{});
      break;
    case DataType::kDouble:
      emit(double{});
      break;
    case DataType::kInt64:
      emit(int64_t{});
      break;
    case DataType::kInt32:
      emit(int32_t{});
      break;
    case DataType::kInt16:
      emit(int16_t{});
      break;
    case DataType::kInt8:
      emit(int8_t{});
      break;
    case DataType::kUInt8:
    case DataType::kBool:
      emit(uint8_t{});
      break;
    case DataType::kUInt16:
      emit(uint16_t{});
      break;
    case DataType::kUInt32:
      emit(uint32_t{});
      break;
    case DataType::kString:
      if (t.strings) {
        for (const auto& s : *t.strings) items.push_back(quote(s));
      }
      break;
    default:
      return "";  // Half floats and complex numbers are not printed inline.
  }
  return "[" + fmt::format("{}", fmt::join(items, ", ")) + "]";
}

bool printable_inline(const TensorData& t, int max_elements) {
  if (!t.has_data()) return false;
  switch (t.dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kComplex64:
    case DataType::kComplex128:
    case DataType::kUInt64:
    case DataType::kUndefined:
      return false;
    default:
      break;
  }
  return t.element_count() <= max_elements;
}

std::string format_tensor(const TensorData& t, int max_elements) {
  Shape shape = Shape::of(t.dims);
  std::string text = "tensor<" + print_type(t.dtype, shape) + ">";
  if (printable_inline(t, max_elements)) text += format_tensor_values(t);
  return text;
}

void print_graph_into(const Graph& graph, int max_inline, int indent, std::string& out);

std::string format_attribute(const Attribute& a, int max_inline, int indent) {
  auto join = [](const auto& items, auto format_one) {
    std::vector<std::string> parts;
    for (const auto& item : items) parts.push_back(format_one(item));
    return "[" + fmt::format("{}", fmt::join(parts, ",")) + "]";
  };
  switch (a.kind) {
    case AttributeKind::kFloat:
      return format_float(a.f);
    case AttributeKind::kInt:
      return fmt::format("{}", a.i);
    case AttributeKind::kString:
      return quote(a.s);
    case AttributeKind::kTensor:
      return format_tensor(a.t, max_inline);
    case AttributeKind::kGraph: {
      std::string body;
      print_graph_into(*a.g, max_inline, indent, body);
      return body;
    }
    case AttributeKind::kSparseTensor:
      return "sparse_tensor<" + std::to_string(a.opaque.serialized.size()) + " bytes>";
    case AttributeKind::kTypeProto:
      return "type_proto<" + std::to_string(a.opaque.serialized.size()) + " bytes>";
    case AttributeKind::kFloats:
      return a.floats.empty() ? "floats[]"
                              : join(a.floats, [](float v) { return format_float(v); });
    case AttributeKind::kInts:
      return a.ints.empty() ? "ints[]" : join(a.ints, [](int64_t v) { return std::to_string(v); });
    case AttributeKind::kStrings:
      return a.strings.empty() ? "strings[]"
                               : join(a.strings, [](const std::string& v) { return quote(v); });
    case AttributeKind::kTensors:
      return "tensors" +
             join(a.tensors, [&](const TensorData& t) { return format_tensor(t, max_inline); });
    case AttributeKind::kGraphs:
      return "graphs" + join(a.graphs, [&](const std::shared_ptr<const Graph>& g) {
               std::string body;
               print_graph_into(*g, max_inline, indent, body);
               return body;
             });
    case AttributeKind::kSparseTensors:
      return "sparse_tensors<" + std::to_string(a.opaques.size()) + ">";
    case AttributeKind::kTypeProtos:
      return "type_protos<" + std::to_string(a.opaques.size()) + ">";
  }
  return "?";
}

std::string value_ref(const Graph& graph, ValueId id) {
  if (id == kNoValue) return "_";
  const Value& v = graph.value(id);
  return (v.initializer ? "@" : "%") + name_token(v.name);
}

std::string typed_value(const Graph& graph, ValueId id) {
  const Value& v = graph.value(id);
  if (v.dtype == DataType::kUndefined && !v.shape.rank_known) return value_ref(graph, id);
  return value_ref(graph, id) + ": " + print_type(v.dtype, v.shape);
}

void print_graph_into(const Graph& graph, int max_inline, int indent, std::string& out) {
  std::string pad(indent, ' ');
  out += "graph " + name_token(graph.name);
  std::vector<std::string> opsets;
  for (const auto& [domain, version] : graph.opset_imports) {
    opsets.push_back(fmt::format("{}={}", domain.empty() ? "ai.onnx" : domain, version));
  }
  if (!opsets.empty()) out += " [" + fmt::format("{}", fmt::join(opsets, ", ")) + "]";
  std::vector<std::string> inputs;
  for (ValueId id : graph.inputs()) inputs.push_back(typed_value(graph, id));
  out += " (" + fmt::format("{}", fmt::join(inputs, ", ")) + ") {\n";
  for (ValueId id : graph.initializers()) {
    const Value& v = graph.value(id);
    const auto& inputs = graph.inputs();
    if (std::find(inputs.begin(), inputs.end(), id) != inputs.end()) continue;  // Declared above.
    out += pad + "  " + typed_value(graph, id);
    if (printable_inline(*v.initializer, max_inline)) {
      out += " = " + format_tensor_values(*v.initializer);
    }
    out += "\n";
  }
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    std::vector<std::string> outputs;
    for (ValueId output : n.outputs) outputs.push_back(typed_value(graph, output));
    out += pad + "  " + fmt::format("{}", fmt::join(outputs, ", ")) + " = ";
    bool default_name =
        n.name.empty() || (!n.outputs.empty() && graph.value(n.outputs[0]).name == n.name);
    if (!default_name) out += quote(n.name) + " ";
    if (!n.domain.empty()) out += n.domain + ".";
    out += n.op_type;
    if (!n.attributes.empty()) {
      std::vector<std::string> attributes;
      for (const auto& [key, value] : n.attributes) {
        attributes.push_back(name_token(key) + "=" +
                             format_attribute(value, max_inline, indent + 2));
      }
      out += "[" + fmt::format("{}", fmt::join(attributes, ", ")) + "]";
    }
    std::vector<std::string> inputs_text;
    for (ValueId input : n.inputs) inputs_text.push_back(value_ref(graph, input));
    out += "(" + fmt::format("{}", fmt::join(inputs_text, ", ")) + ")\n";
  }
  std::vector<std::string> outputs;
  for (ValueId id : graph.outputs()) outputs.push_back(typed_value(graph, id));
  out += pad + "  return " + fmt::format("{}", fmt::join(outputs, ", ")) + "\n" + pad + "}";
}

}  // namespace

std::string print_type(DataType dtype, const Shape& shape) {
  // Into one string: inspect prints a type per node, and a string per dim added up.
  std::string out(dtype_name(dtype));
  if (!shape.rank_known) return out;
  out += '[';
  for (std::size_t i = 0; i < shape.dims.size(); ++i) {
    if (i > 0) out += ',';
    const Dim& d = shape.dims[i];
    if (d.is_known()) {
      fmt::format_to(std::back_inserter(out), "{}", d.size);
    } else if (!d.symbol.empty()) {
      out += name_token(d.symbol);
    } else {
      out += '?';
    }
  }
  out += ']';
  return out;
}

std::string print_graph(const Graph& graph, int max_inline_elements) {
  std::string out;
  print_graph_into(graph, max_inline_elements, 0, out);
  return out + "\n";
}

}  // namespace cleave
