// Stream IR helpers: item types, filter ops, traversal and the structural checks.
#include "stream/stream_ir.h"

#include "ir/text.h"
#include "support/limits.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace cleave {

namespace {

// An item of more elements than this (2^40) is no tensor a host holds; larger products also
// overflow the byte counts computed from them.
constexpr int64_t kMaxItemElements = int64_t{1} << 40;

void collect(const Stream& stream, std::vector<const Stream*>& out) {
  if (stream.is_filter()) {
    out.push_back(&stream);
    return;
  }
  for (const Stream& child : stream.streams) collect(child, out);
}

std::string kind_word(const Stream& s) {
  switch (s.kind) {
    case StreamKind::kFilter:
      return "filter";
    case StreamKind::kPipeline:
      return "pipeline";
    case StreamKind::kSplitJoin:
      return "splitjoin";
  }
  return "stream";
}

[[noreturn]] void fail(const std::string& origin, const Stream& s, const std::string& why) {
  throw Error(fmt::format("{}: {} \"{}\": {}", origin, kind_word(s), s.name, why));
}

// Checks one side (inputs or outputs) of a model filter against its rate and item type.
void check_model_side(const std::string& origin, const Stream& s, const Graph& graph,
                      const std::vector<ValueId>& values, int64_t rate,
                      const std::optional<ItemType>& item, const char* side,
                      const char* rate_name) {
  if (values.empty()) fail(origin, s, fmt::format("model has no {}", side));
  const auto count = static_cast<int64_t>(values.size());
  if (rate % count != 0) {
    fail(origin, s,
         fmt::format("{} {} does not divide over the model's {} {}", rate_name, rate, count, side));
  }
  const int64_t per_value = rate / count;
  for (ValueId id : values) {
    const Value& v = graph.value(id);
    if (!v.shape.rank_known || !v.shape.is_static()) {
      fail(origin, s,
           fmt::format("model {} \"{}\" has no static shape ({}); a filter needs one", side, v.name,
                       print_type(v.dtype, v.shape)));
    }
    const int64_t elements = v.shape.element_count();
    if (elements % per_value != 0) {
      fail(origin, s,
           fmt::format("{} {} does not divide model {} \"{}\" {} ({} elements into {} items)",
                       rate_name, rate, side, v.name, print_type(v.dtype, v.shape), elements,
                       per_value));
    }
    if (item) {
      if (item->dtype != v.dtype || item->element_count() * per_value != elements) {
        fail(origin, s,
             fmt::format("model {} \"{}\" is {} but the channel carries {} items of {}", side,
                         v.name, print_type(v.dtype, v.shape), per_value, print_item_type(*item)));
      }
    }
  }
}

void verify_filter(const Stream& s, const std::string& origin) {
  if (s.pop <= 0 || s.peek <= 0 || s.push <= 0) {
    fail(origin, s,
         fmt::format("rates must be positive (pop {}, peek {}, push {})", s.pop, s.peek, s.push));
  }
  if (std::max({s.pop, s.peek, s.push}) > kMaxStreamRate) {
    fail(origin, s,
         fmt::format("rates must be at most {} items per firing (pop {}, peek {}, push {})",
                     kMaxStreamRate, s.pop, s.peek, s.push));
  }
  if (s.peek < s.pop) fail(origin, s, fmt::format("peek {} is less than pop {}", s.peek, s.pop));
  switch (s.op) {
    case FilterOp::kModel:
      if (!s.graph) {
        if (s.model.empty()) fail(origin, s, "model filter without a model");
        return;  // loaded without models: shapes are checked when the models are.
      }
      check_model_side(origin, s, *s.graph, s.graph->inputs(), s.peek, s.input_item, "inputs",
                       "peek");
      check_model_side(origin, s, *s.graph, s.graph->outputs(), s.push, s.output_item, "outputs",
                       "push");
      return;
    case FilterOp::kIdentity:
      if (!s.reads.empty()) {
        if (s.pop != s.peek) {
          fail(origin, s,
               fmt::format("reference reader needs pop == peek (pop {}, peek {})", s.pop, s.peek));
        }
        return;
      }
      if (s.pop != s.peek || s.pop != s.push) {
        fail(origin, s,
             fmt::format("identity needs pop == peek == push (pop {}, peek {}, push {})", s.pop,
                         s.peek, s.push));
      }
      return;
    case FilterOp::kSlice: {
      const int64_t begin = s.args.empty() ? 0 : s.args[0];
      if (begin < 0 || begin + s.push > s.peek) {
        fail(origin, s,
             fmt::format("slice of items {}..{} is outside the peek window of {}", begin,
                         begin + s.push - 1, s.peek));
      }
      return;
    }
    case FilterOp::kConcat:
      if (s.pop != s.peek || s.push != 1) {
        fail(origin, s,
             fmt::format("concat needs pop == peek and push 1 (pop {}, peek {}, push {})", s.pop,
                         s.peek, s.push));
      }
      return;
    case FilterOp::kSeparator: {
      if (s.pop != s.peek || static_cast<int64_t>(s.args.size()) != s.push) {
        fail(origin, s,
             fmt::format("separator needs pop == peek and one index per pushed item (pop {}, "
                         "peek {}, push {}, {} indices)",
                         s.pop, s.peek, s.push, s.args.size()));
      }
      for (int64_t index : s.args) {
        if (index < 0 || index >= s.pop) {
          fail(origin, s, fmt::format("separator index {} is outside 0..{}", index, s.pop - 1));
        }
      }
      return;
    }
  }
}

void verify(const Stream& s, const std::string& origin, std::set<std::string>& names,
            int64_t depth) {
  if (s.name.empty()) throw Error(fmt::format("{}: a {} has no name", origin, kind_word(s)));
  if (!s.is_filter() && depth >= kMaxStreamDepth) {
    fail(origin, s,
         fmt::format("streams nest deeper than {} levels, the most a program may have",
                     kMaxStreamDepth));
  }
  if (!names.insert(s.name).second) fail(origin, s, "the name is used twice");
  if (s.is_filter()) {
    verify_filter(s, origin);
    return;
  }
  if (s.streams.empty()) fail(origin, s, "has no streams");
  if (s.kind == StreamKind::kSplitJoin) {
    const std::size_t branches = s.streams.size();
    if (s.split.kind == SplitKind::kRoundRobin && s.split.weights.size() != branches) {
      fail(origin, s,
           fmt::format("round-robin splitter has {} weights for {} branches",
                       s.split.weights.size(), branches));
    }
    if (s.join.weights.size() != branches) {
      fail(origin, s,
           fmt::format("round-robin joiner has {} weights for {} branches", s.join.weights.size(),
                       branches));
    }
    for (int64_t w : s.split.weights) {
      if (w <= 0 || w > kMaxStreamRate) {
        fail(origin, s, fmt::format("splitter weight {} is not from 1 to {}", w, kMaxStreamRate));
      }
    }
    for (int64_t w : s.join.weights) {
      if (w <= 0 || w > kMaxStreamRate) {
        fail(origin, s, fmt::format("joiner weight {} is not from 1 to {}", w, kMaxStreamRate));
      }
    }
  }
  for (const Stream& child : s.streams) verify(child, origin, names, depth + 1);
}

}  // namespace

std::string_view filter_op_name(FilterOp op) {
  switch (op) {
    case FilterOp::kModel:
      return "model";
    case FilterOp::kIdentity:
      return "identity";
    case FilterOp::kSlice:
      return "slice";
    case FilterOp::kConcat:
      return "concat";
    case FilterOp::kSeparator:
      return "separator";
  }
  return "?";
}

std::optional<FilterOp> parse_filter_op(std::string_view name) {
  for (FilterOp op : {FilterOp::kModel, FilterOp::kIdentity, FilterOp::kSlice, FilterOp::kConcat,
                      FilterOp::kSeparator}) {
    if (filter_op_name(op) == name) return op;
  }
  return std::nullopt;
}

int64_t ItemType::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string print_item_type(const ItemType& type) {
  return fmt::format("{}[{}]", dtype_name(type.dtype), fmt::join(type.shape, ","));
}

ItemType parse_item_type(std::string_view text, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return Error(
        fmt::format("{}: bad item type \"{}\": {} (expected e.g. f32[2,80])", what, text, why));
  };
  const std::size_t open = text.find('[');
  if (open == std::string_view::npos || text.back() != ']') throw bad("no [dims]");
  const std::optional<DataType> dtype = parse_dtype_name(text.substr(0, open));
  if (!dtype) throw bad("unknown element type");
  ItemType type{*dtype, {}};
  int64_t elements = 1;
  std::string_view dims = text.substr(open + 1, text.size() - open - 2);
  while (!dims.empty()) {
    const std::size_t comma = dims.find(',');
    const std::string_view part = dims.substr(0, comma);
    int64_t d = -1;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (ec != std::errc() || end != part.data() + part.size() || d <= 0) {
      throw bad(fmt::format("dim \"{}\" is not a positive integer", part));
    }
    type.shape.push_back(d);
    if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxItemElements) {
      throw bad(fmt::format("more than {} elements", kMaxItemElements));
    }
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  return type;
}

std::vector<const Stream*> collect_filters(const Stream& root) {
  std::vector<const Stream*> out;
  collect(root, out);
  return out;
}

void verify_stream(const Stream& root, const std::string& origin) {
  std::set<std::string> names;
  verify(root, origin, names, 1);
  std::set<std::string> published;
  for (const Stream* f : collect_filters(root)) {
    if (!f->publishes.empty() && !published.insert(f->publishes).second) {
      fail(origin, *f, fmt::format("a second filter publishes \"{}\"", f->publishes));
    }
  }
  for (const Stream* f : collect_filters(root)) {
    if (f->reads.empty()) continue;
    if (f->op != FilterOp::kIdentity) fail(origin, *f, "only an identity filter reads a reference");
    if (!published.count(f->reads)) {
      fail(origin, *f, fmt::format("reads \"{}\", which no filter publishes", f->reads));
    }
  }
}

}  // namespace cleave
