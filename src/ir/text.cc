// Recursive-descent parser of the graph text form (the printer is in text_print.cc).
#include "ir/text.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ir/text_names.h"

namespace cleave {

namespace {

using text_detail::is_plain_name_char;
using text_detail::name_token;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Graph parse_top() {
    Graph g = parse_graph_body();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the graph");
    return g;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error(fmt::format("graph text {}:{}: {}", line, column, what));
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}'", c));
  }
  bool accept_word(std::string_view word) {
    skip_space();
    if (text_.substr(pos_, word.size()) != word) return false;
    std::size_t end = pos_ + word.size();
    if (end < text_.size() && is_plain_name_char(text_[end])) return false;
    pos_ = end;
    return true;
  }

  std::string parse_quoted() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        char e = text_[pos_++];
        if (e == 'n')
          out += '\n';
        else if (e == 't')
          out += '\t';
        else if (e == 'x' && pos_ + 2 <= text_.size()) {
          out += static_cast<char>(std::stoi(std::string(text_.substr(pos_, 2)), nullptr, 16));
          pos_ += 2;
        } else {
          out += e;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  std::string parse_name() {
    skip_space();
    if (peek('"')) return parse_quoted();
    std::size_t start = pos_;
    while (pos_ < text_.size() && is_plain_name_char(text_[pos_])) ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }

  int64_t parse_int() {
    skip_space();
    int64_t value = 0;
    auto result = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
    if (result.ec != std::errc()) fail("expected an integer");
    pos_ = result.ptr - text_.data();
    return value;
  }

  // A number as written: an integer keeps all its 64 bits (a double holds only 53, and
  // INT64_MAX, a Slice's "to the end", would come back as INT64_MIN).
  struct Number {
    double value = 0;
    bool is_float = false;
    int64_t integer = 0;
    template <typename T>
    T as() const {
      if constexpr (std::is_integral_v<T>) {
        if (!is_float) return static_cast<T>(integer);
      }
      return static_cast<T>(value);
    }
  };

  Number parse_number() {
    skip_space();
    for (auto [word, value] : {std::pair<std::string_view, double>{"nan", NAN},
                               {"inf", INFINITY},
                               {"-inf", -INFINITY}}) {
      if (accept_word(word)) return {value, true, 0};
    }
    std::size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' ||
                 ((c == '-' || c == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))) {
        is_float = true;
        ++pos_;
      } else {
        break;
      }
    }
    std::string token(text_.substr(start, pos_ - start));
    if (token.empty() || token == "-" || token == "+") fail("expected a number");
    try {
      if (!is_float) {
        const int64_t integer = std::stoll(token);
        return {static_cast<double>(integer), false, integer};
      }
      return {std::stod(token), true, 0};
    } catch (const std::exception&) {
      fail("bad number '" + token + "'");
    }
  }

  void parse_type(DataType& dtype, Shape& shape) {
    std::string type_name = parse_name();
    auto parsed = parse_dtype_name(type_name);
    if (!parsed) fail("unknown element type '" + type_name + "'");
    dtype = *parsed;
    shape = Shape();
    if (!peek('[')) return;
    expect('[');
    shape.rank_known = true;
    if (accept(']')) return;
    do {
      skip_space();
      if (accept('?')) {
        shape.dims.push_back(Dim::unknown());
      } else if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        shape.dims.push_back(Dim::known(parse_int()));
      } else {
        shape.dims.push_back(Dim::named(parse_name()));
      }
    } while (accept(','));
    expect(']');
  }

  // Reads `[v, v, ...]` into a tensor of the given type and dims.
  TensorData parse_tensor_values(DataType dtype, std::vector<int64_t> dims) {
    TensorData t;
    t.dtype = dtype;
    t.dims = std::move(dims);
    expect('[');
    std::vector<Number> numbers;
    std::vector<std::string> strings;
    if (!accept(']')) {
      do {
        if (dtype == DataType::kString) {
          strings.push_back(parse_quoted());
        } else {
          numbers.push_back(parse_number());
        }
      } while (accept(','));
      expect(']');
    }
    int64_t count = t.element_count();
    std::size_t given = dtype == DataType::kString ? strings.size() : numbers.size();
    if (static_cast<int64_t>(given) != count) {
      fail(fmt::format("tensor has {} values, its shape needs {}", given, count));
    }
    if (dtype == DataType::kString) {
      t.strings = std::make_shared<std::vector<std::string>>(std::move(strings));
      return t;
    }
    auto raw = std::make_shared<std::vector<std::byte>>(count * element_size(dtype));
    auto store = [&](auto typed) {
      using T = decltype(typed);
      for (int64_t i = 0; i < count; ++i) {
        T v = numbers[i].template as<T>();
        std::memcpy(raw->data() + i * sizeof(T), &v, sizeof(T));
      }
    };
    switch (dtype) {
      case DataType::kFloat:
        store(float{});
        break;
      case DataType::kDouble:
        store(double{});
        break;
      case DataType::kInt64:
        store(int64_t{});
        break;
      case DataType::kInt32:
        store(int32_t{});
        break;
      case DataType::kInt16:
        store(int16_t{});
        break;
      case DataType::kInt8:
        store(int8_t{});
        break;
      case DataType::kUInt8:
      case DataType::kBool:
        store(uint8_t{});
        break;
      case DataType::kUInt16:
        store(uint16_t{});
        break;
      case DataType::kUInt32:
        store(uint32_t{});
        break;
      default:
        fail(fmt::format("inline values of type {} are not supported", dtype_name(dtype)));
    }
    t.bytes = std::move(raw);
    return t;
  }

  TensorData parse_tensor_literal() {
    // After the word `tensor`: <type>[values]?
    expect('<');
    DataType dtype;
    Shape shape;
    parse_type(dtype, shape);
    expect('>');
    if (!shape.is_static()) fail("a tensor literal needs a fully known shape");
    if (peek('[')) return parse_tensor_values(dtype, shape.sizes());
    TensorData t;
    t.dtype = dtype;
    t.dims = shape.sizes();
    return t;
  }

  Attribute parse_attribute_value() {
    skip_space();
    if (accept_word("tensor")) return Attribute::of_tensor(parse_tensor_literal());
    if (accept_word("graph")) {
      pos_ -= 5;
      return Attribute::of_graph(std::make_shared<const Graph>(parse_graph_body()));
    }
    if (accept_word("ints")) {
      expect('[');
      expect(']');
      return Attribute::of_ints({});
    }
    if (accept_word("floats")) {
      expect('[');
      expect(']');
      return Attribute::of_floats({});
    }
    if (accept_word("strings")) {
      expect('[');
      expect(']');
      return Attribute::of_strings({});
    }
    if (accept_word("tensors")) {
      Attribute a;
      a.kind = AttributeKind::kTensors;
      expect('[');
      if (!accept(']')) {
        do {
          if (!accept_word("tensor")) fail("expected 'tensor<...>'");
          a.tensors.push_back(parse_tensor_literal());
        } while (accept(','));
        expect(']');
      }
      return a;
    }
    if (accept_word("graphs")) {
      Attribute a;
      a.kind = AttributeKind::kGraphs;
      expect('[');
      if (!accept(']')) {
        do {
          a.graphs.push_back(std::make_shared<const Graph>(parse_graph_body()));
        } while (accept(','));
        expect(']');
      }
      return a;
    }
    if (peek('"')) return Attribute::of_string(parse_quoted());
    if (accept('[')) {
      if (peek('"')) {
        std::vector<std::string> items;
        do items.push_back(parse_quoted());
        while (accept(','));
        expect(']');
        return Attribute::of_strings(std::move(items));
      }
      std::vector<Number> numbers;
      bool any_float = false;
      do {
        numbers.push_back(parse_number());
        any_float = any_float || numbers.back().is_float;
      } while (accept(','));
      expect(']');
      if (any_float) {
        std::vector<float> floats;
        for (const Number& n : numbers) floats.push_back(static_cast<float>(n.value));
        return Attribute::of_floats(std::move(floats));
      }
      std::vector<int64_t> ints;
      for (const Number& n : numbers) ints.push_back(n.integer);
      return Attribute::of_ints(std::move(ints));
    }
    const Number number = parse_number();
    if (number.is_float) return Attribute::of_float(static_cast<float>(number.value));
    return Attribute::of_int(number.integer);
  }

  ValueId lookup(Graph& g, const std::string& name, char sigil) {
    auto id = g.find_value(name);
    std::size_t after = pos_;
    pos_ = after - name_token(name).size() - 1;  // Point errors at the sigil.
    // Inside a control-flow body, an unknown name refers to a value of an enclosing graph.
    if (!id && sigil == '%' && depth_ > 1) {
      pos_ = after;
      return g.add_value(name);
    }
    if (!id) fail(fmt::format("{}{} is used before it is defined", sigil, name));
    if (sigil == '@' && !g.value(*id).initializer)
      fail(fmt::format("@{} is not an initializer", name));
    pos_ = after;
    return *id;
  }

  // `%name: type` or `@name: type [= values]`, as declared in an input list or body.
  ValueId parse_declaration(Graph& g, bool as_input) {
    skip_space();
    char sigil = pos_ < text_.size() ? text_[pos_] : '\0';
    if (sigil != '%' && sigil != '@') fail("expected %name or @name");
    ++pos_;
    std::string name = parse_name();
    DataType dtype = DataType::kUndefined;
    Shape shape;
    if (accept(':')) parse_type(dtype, shape);
    if (sigil == '%') {
      if (!as_input) fail("expected @name for an initializer");
      return g.add_input(name, dtype, shape);
    }
    if (!shape.is_static()) fail(fmt::format("initializer @{} needs a fully known shape", name));
    TensorData t;
    t.dtype = dtype;
    t.dims = shape.sizes();
    if (accept('=')) t = parse_tensor_values(dtype, shape.sizes());
    try {
      t.element_count();
    } catch (const Error& e) {
      fail(fmt::format("initializer @{}: {}", name, e.what()));
    }
    ValueId id = g.add_initializer(name, std::move(t));
    if (as_input) {
      std::vector<ValueId> inputs = g.inputs();
      inputs.push_back(id);
      g.set_inputs(std::move(inputs));
    }
    return id;
  }

  Graph parse_graph_body() {
    if (!accept_word("graph")) fail("expected 'graph'");
    if (++depth_ > 64) fail("graphs nested more than 64 deep");
    Graph g;
    g.name = parse_name();
    if (accept('[')) {
      g.opset_imports.clear();
      if (!accept(']')) {
        do {
          std::string domain = parse_name();
          expect('=');
          g.opset_imports[domain == "ai.onnx" ? "" : domain] = parse_int();
        } while (accept(','));
        expect(']');
      }
    }
    expect('(');
    if (!accept(')')) {
      do parse_declaration(g, true);
      while (accept(','));
      expect(')');
    }
    expect('{');
    while (true) {
      skip_space();
      if (accept_word("return")) break;
      if (peek('@')) {
        parse_declaration(g, false);
        continue;
      }
      parse_node(g);
    }
    std::vector<ValueId> outputs;
    if (!peek('}')) {
      do {
        skip_space();
        char sigil = pos_ < text_.size() ? text_[pos_] : '\0';
        if (sigil != '%' && sigil != '@') fail("expected a value to return");
        ++pos_;
        ValueId id = lookup(g, parse_name(), sigil);
        if (accept(':')) {
          DataType dtype;
          Shape shape;
          parse_type(dtype, shape);
          g.value(id).dtype = dtype;
          g.value(id).shape = shape;
        }
        outputs.push_back(id);
      } while (accept(','));
    }
    g.set_outputs(outputs);
    expect('}');
    --depth_;
    return g;
  }

  void parse_node(Graph& g) {
    struct Output {
      std::string name;
      DataType dtype = DataType::kUndefined;
      Shape shape;
    };
    std::vector<Output> outputs;
    do {
      expect('%');
      Output out;
      out.name = parse_name();
      if (accept(':')) parse_type(out.dtype, out.shape);
      outputs.push_back(std::move(out));
    } while (accept(','));
    expect('=');
    std::string node_name;
    if (peek('"')) node_name = parse_quoted();
    std::string qualified = parse_name();
    std::string domain, op_type = qualified;
    if (auto dot = qualified.rfind('.'); dot != std::string::npos) {
      domain = qualified.substr(0, dot);
      op_type = qualified.substr(dot + 1);
    }
    std::vector<std::pair<std::string, Attribute>> attributes;
    if (accept('[')) {
      if (!accept(']')) {
        do {
          std::string key = parse_name();
          expect('=');
          attributes.emplace_back(key, parse_attribute_value());
        } while (accept(','));
        expect(']');
      }
    }
    expect('(');
    std::vector<ValueId> inputs;
    if (!accept(')')) {
      do {
        skip_space();
        if (accept('_')) {
          inputs.push_back(kNoValue);
          continue;
        }
        char sigil = pos_ < text_.size() ? text_[pos_] : '\0';
        if (sigil != '%' && sigil != '@') fail("expected %name, @name or _ as an input");
        ++pos_;
        inputs.push_back(lookup(g, parse_name(), sigil));
      } while (accept(','));
      expect(')');
    }
    std::vector<ValueId> output_ids;
    for (auto& out : outputs) {
      if (g.find_value(out.name)) fail(fmt::format("%{} is defined twice", out.name));
      output_ids.push_back(g.add_value(out.name, out.dtype, out.shape));
    }
    if (node_name.empty()) node_name = outputs.front().name;
    g.add_node(op_type, std::move(inputs), std::move(output_ids), std::move(attributes),
               std::move(node_name), std::move(domain));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Graph parse_graph(std::string_view text) {
  return Parser(text).parse_top();
}

}  // namespace cleave
