// Einsum lowering: two-operand contractions as Transpose, MatMul, Transpose.
#include "passes/einsum_lowering.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace cleave {

namespace {

// The equation's terms without spaces; nullopt unless it is two letter-only input terms.
struct Equation {
  std::string a, b, out;
};

std::optional<Equation> parse(const std::string& equation) {
  std::string text;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  }
  const std::size_t arrow = text.find("->");
  const std::string left = text.substr(0, arrow);
  const std::size_t comma = left.find(',');
  if (comma == std::string::npos || left.find(',', comma + 1) != std::string::npos) {
    return std::nullopt;
  }
  Equation e{left.substr(0, comma), left.substr(comma + 1), ""};
  if (arrow != std::string::npos) {
    e.out = text.substr(arrow + 2);
  } else {
    // Implicit output: the letters used once, in ASCII order.
    for (char c : e.a + e.b) {
      if (std::count(e.a.begin(), e.a.end(), c) + std::count(e.b.begin(), e.b.end(), c) == 1) {
        e.out += c;
      }
    }
    std::sort(e.out.begin(), e.out.end());
  }
  for (const std::string* term : {&e.a, &e.b, &e.out}) {
    for (char c : *term) {
      if (!std::isalpha(static_cast<unsigned char>(c)) ||
          std::count(term->begin(), term->end(), c) != 1) {
        return std::nullopt;  // Ellipsis, diagonals or junk: the kernel's.
      }
    }
  }
  return e;
}

// Positions in `from` of each letter of `to` (a permutation when both hold the same letters).
std::vector<int64_t> permutation(const std::string& from, const std::string& to) {
  std::vector<int64_t> perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Shape permuted(const Shape& shape, const std::vector<int64_t>& perm) {
  if (shape.rank() != perm.size()) return Shape::unknown_rank();
  Shape out = shape;
  for (std::size_t i = 0; i < perm.size(); ++i)
    out.dims[i] = shape.dims[static_cast<std::size_t>(perm[i])];
  return out;
}

bool try_lower(Graph& graph, NodeId id) {
  const Node& einsum = graph.node(id);
  if (einsum.op_type != "Einsum" || !einsum.domain.empty() || einsum.inputs.size() != 2 ||
      einsum.outputs.size() != 1 || einsum.inputs[0] == kNoValue || einsum.inputs[1] == kNoValue) {
    return false;
  }
  const std::optional<Equation> e = parse(einsum.string_attribute("equation", ""));
  if (!e) return false;
  std::string batch, row, column, contracted;
  for (char c : e->a + e->b) {
    const bool in_a = e->a.find(c) != std::string::npos;
    const bool in_b = e->b.find(c) != std::string::npos;
    const bool in_out = e->out.find(c) != std::string::npos;
    std::string& group = in_a && in_b ? (in_out ? batch : contracted) : in_a ? row : column;
    if (!in_out && !(in_a && in_b)) return false;  // Summed over in one operand only.
    if (group.find(c) == std::string::npos) group += c;
  }
  for (char c : e->out) {
    if (e->a.find(c) == std::string::npos && e->b.find(c) == std::string::npos) return false;
  }
  if (row.size() != 1 || column.size() != 1 || contracted.size() != 1) return false;
  // Batch letters in the output's order, so that the product needs no more than one move.
  std::string ordered;
  for (char c : e->out) {
    if (batch.find(c) != std::string::npos) ordered += c;
  }
  const ValueId a = einsum.inputs[0], b = einsum.inputs[1], output = einsum.outputs[0];
  for (auto [value, term] : {std::pair{a, &e->a}, std::pair{b, &e->b}}) {
    const Shape& shape = graph.value(value).shape;
    if (shape.rank_known && shape.rank() != term->size()) return false;  // The kernel says why.
  }
  const DataType dtype = graph.value(a).dtype;
  if (dtype != DataType::kFloat) return false;  // MatMul's kernel is float's.
  const std::string name = einsum.name.empty() ? "einsum" : einsum.name;
  graph.remove_node(id);

  auto arrange = [&](ValueId value, const std::string& from, const std::string& to,
                     const std::string& suffix) {
    const std::vector<int64_t> perm = permutation(from, to);
    if (is_identity(perm)) return value;
    const ValueId moved = graph.add_value(unique_value_name(graph, name + suffix), dtype,
                                          permuted(graph.value(value).shape, perm));
    graph.add_node("Transpose", {value}, {moved}, {{"perm", Attribute::of_ints(perm)}},
                   name + suffix);
    return moved;
  };
  const ValueId left = arrange(a, e->a, ordered + row + contracted, "_lhs");
  const ValueId right = arrange(b, e->b, ordered + contracted + column, "_rhs");
  const std::string product_order = ordered + row + column;
  const std::vector<int64_t> to_output = permutation(product_order, e->out);
  if (is_identity(to_output)) {
    graph.add_node("MatMul", {left, right}, {output}, {}, name);
    return true;
  }
  Shape product_shape = Shape::unknown_rank();
  const Shape& out_shape = graph.value(output).shape;
  if (out_shape.rank() == product_order.size()) {
    product_shape = permuted(out_shape, permutation(e->out, product_order));
  }
  const ValueId product =
      graph.add_value(unique_value_name(graph, name + "_product"), dtype, product_shape);
  graph.add_node("MatMul", {left, right}, {product}, {}, name + "_product");
  graph.add_node("Transpose", {product}, {output}, {{"perm", Attribute::of_ints(to_output)}}, name);
  return true;
}

}  // namespace

PassResult lower_einsums(Graph& graph) {
  PassResult result{"Einsum lowering", {}, {}};
  for (NodeId id : graph.topological_order()) {
    if (try_lower(graph, id)) result.add("Einsums lowered to MatMul");
  }
  return result;
}

}  // namespace cleave
