// A reader for cleave's StreamIt builder code: filters by their comment, rates and work, then the
// tree.
#include "codegen/streamit_reader.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "stream/stream_json.h"
#include "support/limits.h"

namespace cleave {

namespace {

constexpr std::string_view kConvertedPrefix = "// Converted from model \"";

// One filter function as printed: its name in the tree, the stream it defines.
struct FilterFunction {
  Stream stream;
  int line = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string origin) : text_(text), origin_(std::move(origin)) {
    std::size_t start = 0;
    while (start <= text_.size()) {
      const std::size_t end = text_.find('\n', start);
      lines_.push_back(
          text_.substr(start, end == std::string_view::npos ? text_.size() - start : end - start));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
  }

  StreamitText parse() {
    StreamitText out;
    std::vector<std::string_view> comments;
    for (line_ = 0; line_ < static_cast<int>(lines_.size()); ++line_) {
      const std::string_view line = trimmed(lines_[line_]);
      if (starts_with(line, kConvertedPrefix)) {
        read_conversion(line, out);
      } else if (starts_with(line, "//")) {
        comments.push_back(line);
        continue;
      } else if (starts_with(line, "stream_t filter_")) {
        read_filter(line, comments);
      } else if (starts_with(line, "stream_t stream_")) {
        out.program.root = read_program();
        have_root_ = true;
      } else if (!line.empty() && !starts_with(line, "#include") &&
                 !starts_with(line, "namespace streamit") && line != "}  // namespace streamit") {
        fail(
            "expected a filter function (stream_t filter_NAME() {), the program function "
            "(stream_t stream_NAME() {) or a comment, not \"" +
            std::string(line) + "\"");
      }
      comments.clear();
    }
    if (!have_root_) {
      line_ = static_cast<int>(lines_.size()) - 1;
      fail("no program function (stream_t stream_NAME() { return ...; })");
    }
    out.program.origin = origin_;
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("{}:{}: {}", origin_, line_ + 1, why));
  }

  static std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  }
  static bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
  }

  int64_t integer(std::string_view text, const char* what) const {
    text = trimmed(text);
    int64_t value = 0;
    std::size_t used = 0;
    try {
      value = std::stoll(std::string(text), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size()) {
      fail(fmt::format("expected an integer for {}, not \"{}\"", what, text));
    }
    return value;
  }

  // A rate or weight: items per firing, bounded as in program files.
  int64_t rate_value(std::string_view text, const char* what) const {
    const int64_t value = integer(text, what);
    if (value < 1 || value > kMaxStreamRate) {
      fail(fmt::format("expected an integer from 1 to {} for {}, got {}", kMaxStreamRate, what,
                       value));
    }
    return value;
  }

  void read_conversion(std::string_view line, StreamitText& out) const {
    line.remove_prefix(kConvertedPrefix.size());
    const std::size_t quote = line.find("\" (");
    const std::size_t close = line.rfind(").");
    if (quote == std::string_view::npos || close == std::string_view::npos || close < quote) {
      fail("expected // Converted from model \"PATH\" (FINGERPRINT).");
    }
    out.converted_from = std::string(line.substr(0, quote));
    out.converted_fingerprint = std::string(line.substr(quote + 3, close - quote - 3));
  }

  // The comment above a filter: "// NAME: OP(ARGS)  items A -> B" (a model filter's op is its
  // node line or model name, and its item types end the last comment line).
  void read_comment(const std::vector<std::string_view>& comments, Stream& s) const {
    if (comments.empty()) fail("a filter function needs its comment line (// NAME: OP)");
    std::string_view first = comments.front();
    first.remove_prefix(2);
    first = trimmed(first);
    const std::string head = s.name + ": ";
    if (!starts_with(first, head)) {
      fail(
          fmt::format("the comment above filter \"{}\" should start with \"// {}\"", s.name, head));
    }
    std::string_view op = first.substr(head.size());
    std::string_view last = comments.back();
    const std::size_t items = last.find("  items ");
    if (items != std::string_view::npos) {
      const std::string_view types = last.substr(items + 8);
      const std::size_t arrow = types.find(" -> ");
      if (arrow == std::string_view::npos) fail("expected \"items A -> B\"");
      const auto type = [&](std::string_view t) -> std::optional<ItemType> {
        t = trimmed(t);
        if (t == "?") return std::nullopt;
        try {
          return parse_item_type(t, fmt::format("filter \"{}\"", s.name));
        } catch (const Error& e) {
          fail(e.what());
        }
      };
      s.input_item = type(types.substr(0, arrow));
      s.output_item = type(types.substr(arrow + 4));
      if (comments.size() == 1) op = op.substr(0, op.find("  items "));
    }
    if (s.op == FilterOp::kModel) return;
    const std::size_t paren = op.find('(');
    const std::string name(trimmed(op.substr(0, paren)));
    const std::optional<FilterOp> parsed = parse_filter_op(name);
    if (!parsed || *parsed == FilterOp::kModel) {
      fail(
          fmt::format("filter \"{}\": unknown op \"{}\" (known: identity, slice, concat, "
                      "separator, or a work function calling run_model)",
                      s.name, name));
    }
    s.op = *parsed;
    if (paren != std::string_view::npos) {
      const std::size_t end = op.find(')', paren);
      if (end == std::string_view::npos) fail("unclosed argument list in the filter comment");
      std::string_view args = op.substr(paren + 1, end - paren - 1);
      while (!args.empty()) {
        const std::size_t comma = args.find(',');
        s.args.push_back(integer(args.substr(0, comma), "an op argument"));
        if (comma == std::string_view::npos) break;
        args.remove_prefix(comma + 1);
      }
    }
  }

  // stream_t filter_ID() { work_t work = [...] { BODY }; return filter<...>(NAME, pop, peek,
  // push, work); }
  void read_filter(std::string_view header, const std::vector<std::string_view>& comments) {
    const std::size_t paren = header.find("()");
    if (paren == std::string_view::npos || !header.ends_with("{")) {
      fail("expected stream_t filter_NAME() {");
    }
    const std::string function(header.substr(9, paren - 9));
    FilterFunction f;
    f.line = line_ + 1;
    Stream& s = f.stream;
    s.kind = StreamKind::kFilter;
    bool returned = false;
    std::string model;
    for (++line_; line_ < static_cast<int>(lines_.size()); ++line_) {
      const std::string_view line = trimmed(lines_[line_]);
      if (line == "}") break;
      const std::size_t run = line.find("run_model(\"");
      if (run != std::string_view::npos) {
        const std::size_t end = line.find('"', run + 11);
        if (end == std::string_view::npos) fail("unclosed model path in run_model(\"...\")");
        model = std::string(line.substr(run + 11, end - run - 11));
      }
      if (!starts_with(line, "return filter<tensor_t, tensor_t>(\"")) continue;
      std::string_view rest = line.substr(35);
      const std::size_t quote = rest.find('"');
      if (quote == std::string_view::npos) fail("unclosed filter name");
      s.name = std::string(rest.substr(0, quote));
      rest.remove_prefix(quote + 1);
      for (const char* rate : {"/*pop=*/", "/*peek=*/", "/*push=*/"}) {
        const std::size_t at = rest.find(rate);
        if (at == std::string_view::npos)
          fail(fmt::format("expected {}N in the filter's rates", rate));
        rest.remove_prefix(at + std::string_view(rate).size());
        const int64_t value = rate_value(rest.substr(0, rest.find(',')), rate);
        (rate[3] == 'o' ? s.pop : rate[3] == 'e' ? s.peek : s.push) = value;
      }
      if (!rest.ends_with("work);")) fail("expected the filter's rates to end with \"work);\"");
      returned = true;
    }
    if (!returned) {
      fail(
          fmt::format("filter function {} has no return filter<tensor_t, tensor_t>(\"NAME\", "
                      "/*pop=*/P, /*peek=*/E, /*push=*/U, work);",
                      function));
    }
    if (!model.empty()) {
      s.op = FilterOp::kModel;
      s.model = model;
    }
    const int end_line = line_;
    line_ = f.line - 1;
    read_comment(comments, s);
    line_ = end_line;
    if (filters_.count(function)) fail(fmt::format("filter function {} defined twice", function));
    filters_[function] = std::move(f);
  }

  // The program function's expression, read character by character (it nests).
  Stream read_program() {
    const int start = line_;
    std::string body;
    for (++line_; line_ < static_cast<int>(lines_.size()); ++line_) {
      if (trimmed(lines_[line_]) == "}") break;
      line_of_.resize(body.size() + lines_[line_].size() + 1, line_);
      body += std::string(lines_[line_]) + "\n";
    }
    const int end_line = line_;
    expr_ = body;
    at_ = 0;
    line_ = start + 1;
    skip_space();
    expect("return ");
    Stream root = expression(1);
    skip_space();
    expect(";");
    line_ = end_line;
    return root;
  }

  void sync_line() {
    if (at_ < line_of_.size()) line_ = line_of_[at_];
  }
  void skip_space() {
    while (at_ < expr_.size() && std::isspace(static_cast<unsigned char>(expr_[at_]))) ++at_;
    sync_line();
  }
  void expect(std::string_view token) {
    if (expr_.compare(std::min(at_, expr_.size()), token.size(), token) != 0) {
      fail(fmt::format("expected \"{}\", found \"{}\"", token, rest_of_line()));
    }
    at_ += token.size();
    sync_line();
  }
  std::string rest_of_line() const {
    const std::size_t end = expr_.find('\n', at_);
    return expr_.substr(std::min(at_, expr_.size()),
                        end == std::string::npos ? std::string::npos : end - at_);
  }
  std::string identifier() {
    const std::size_t begin = at_;
    while (at_ < expr_.size() &&
           (std::isalnum(static_cast<unsigned char>(expr_[at_])) || expr_[at_] == '_')) {
      ++at_;
    }
    if (at_ == begin) fail(fmt::format("expected a name, found \"{}\"", rest_of_line()));
    return expr_.substr(begin, at_ - begin);
  }
  int64_t weight() {
    skip_space();
    const std::size_t begin = at_;
    while (at_ < expr_.size() && std::isdigit(static_cast<unsigned char>(expr_[at_]))) ++at_;
    if (at_ == begin) fail(fmt::format("expected a weight, found \"{}\"", rest_of_line()));
    const int64_t w = rate_value(std::string_view(expr_).substr(begin, at_ - begin), "a weight");
    skip_space();
    expect(",");
    return w;
  }

  // `depth`: how many streams enclose this one (the program's root is at 1).
  Stream expression(int64_t depth) {
    skip_space();
    const std::string name = identifier();
    if (starts_with(name, "filter_")) {
      expect("()");
      auto it = filters_.find(name);
      if (it == filters_.end()) fail(fmt::format("no filter function {} above", name));
      if (it->second.line < 0) fail(fmt::format("filter {} is used twice", name));
      it->second.line = -1;
      return it->second.stream;
    }
    Stream s;
    int weights = 0;
    if (name == "pipeline") {
      s.kind = StreamKind::kPipeline;
    } else if (name == "duplicateSplitJoin" || name == "roundRobinSplitJoin") {
      s.kind = StreamKind::kSplitJoin;
      s.split.kind = name == "duplicateSplitJoin" ? SplitKind::kDuplicate : SplitKind::kRoundRobin;
      weights = name == "duplicateSplitJoin" ? 1 : 2;
    } else {
      fail(
          fmt::format("expected filter_NAME(), pipeline<>, duplicateSplitJoin<> or "
                      "roundRobinSplitJoin<>, not \"{}\"",
                      name));
    }
    if (depth >= kMaxStreamDepth) {
      fail(fmt::format("{} nests deeper than {} levels of streams, the most a program may have",
                       name, kMaxStreamDepth));
    }
    expect("<tensor_t, tensor_t>([&](auto ");
    const std::string var = identifier();
    expect(") {  // ");
    s.name = rest_of_line();
    at_ += s.name.size();
    while (true) {
      skip_space();
      if (expr_.compare(at_, 2, "})") == 0) {
        at_ += 2;
        break;
      }
      expect(var + "->add(");
      if (weights == 2) s.split.weights.push_back(weight());
      if (weights >= 1) s.join.weights.push_back(weight());
      s.streams.push_back(expression(depth + 1));
      skip_space();
      expect(");");
    }
    if (s.streams.empty()) fail(fmt::format("\"{}\" adds no stream", s.name));
    return s;
  }

  std::string_view text_;
  std::string origin_;
  std::vector<std::string_view> lines_;
  int line_ = 0;
  std::map<std::string, FilterFunction> filters_;
  bool have_root_ = false;
  std::string expr_;
  std::vector<int> line_of_;
  std::size_t at_ = 0;
};

}  // namespace

StreamitText parse_streamit(std::string_view text, const std::string& origin,
                            const std::string& base_dir, bool load_models) {
  StreamitText out = Parser(text, origin).parse();
  // Loading and checking as for a program file: model paths relative to the text's folder.
  StreamLoadOptions options;
  options.load_models = load_models;
  options.verify = load_models;
  StreamProgram loaded =
      parse_stream_program(stream_to_json(out.program.root), origin, base_dir, options);
  out.program.root = std::move(loaded.root);
  out.program.origin = origin;
  return out;
}

StreamitText load_streamit(const std::string& path, bool load_models) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot read the StreamIt text", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_streamit(text.str(), path, std::filesystem::path(path).parent_path().string(),
                        load_models);
}

bool is_streamit_path(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".cc" || extension == ".cpp";
}

}  // namespace cleave
