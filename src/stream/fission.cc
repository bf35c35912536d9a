// Fission of a row-wise filter into round-robin copies.
#include "stream/fission.h"

#include <fmt/core.h>

#include <charconv>
#include <set>

#include "frontend/load.h"  // infer_shapes
#include "ir/text.h"
#include "support/limits.h"

namespace cleave {

namespace {

[[noreturn]] void fail(const Stream& f, const std::string& why) {
  throw Error(fmt::format("fission of filter \"{}\": {}", f.name, why));
}

// The model with every input's leading dim set to `rows` (and output shapes re-inferred).
std::shared_ptr<const Graph> with_rows(const Stream& f, int64_t rows) {
  Graph g = *f.graph;
  for (ValueId id : g.inputs()) {
    std::vector<int64_t> sizes = g.value(id).shape.sizes();
    sizes[0] = rows;
    g.value(id).shape = Shape::of(sizes);
  }
  // Forget every computed shape: they follow the old row count.
  for (std::size_t id = 0; id < g.value_capacity(); ++id) {
    Value& v = g.value(static_cast<ValueId>(id));
    if (!v.is_graph_input && !v.initializer) v.shape = Shape();
  }
  infer_shapes(g, f.name);
  for (ValueId id : g.outputs()) {
    const Value& v = g.value(id);
    if (!v.shape.is_static() || v.shape.rank() == 0 || v.shape.dims[0].size != rows) {
      fail(f, fmt::format("with {} rows the model's output \"{}\" is {}, not {} rows", rows, v.name,
                          print_type(v.dtype, v.shape), rows));
    }
  }
  return std::make_shared<Graph>(std::move(g));
}

// A whole token of decimal digits in [1, maximum], else nullopt.
std::optional<int64_t> count_in(std::string_view text, int64_t maximum) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > maximum) {
    return std::nullopt;
  }
  return value;
}

FissionSpec parse_fission_spec(const std::string& spec) {
  const std::size_t equals = spec.find('=');
  const std::size_t colon = spec.find(':', equals == std::string::npos ? 0 : equals);
  if (equals == std::string::npos || equals == 0 || colon == std::string::npos) {
    throw Error(fmt::format("--fission \"{}\": expected NAME=COPIES:GRANULARITY", spec));
  }
  const std::string_view text(spec);
  const std::optional<int64_t> copies =
      count_in(text.substr(equals + 1, colon - equals - 1), kMaxFissionCopies);
  if (!copies) {
    throw Error(fmt::format("--fission \"{}\": COPIES must be an integer from 1 to {}, got \"{}\"",
                            spec, kMaxFissionCopies, text.substr(equals + 1, colon - equals - 1)));
  }
  const std::optional<int64_t> granularity = count_in(text.substr(colon + 1), kMaxStreamRate);
  if (!granularity) {
    throw Error(
        fmt::format("--fission \"{}\": GRANULARITY must be an integer from 1 to {}, got \"{}\"",
                    spec, kMaxStreamRate, text.substr(colon + 1)));
  }
  if (*copies * *granularity > kMaxStreamRate) {
    throw Error(
        fmt::format("--fission \"{}\": {} copies of {} rows deal {} rows per firing, more than {}",
                    spec, *copies, *granularity, *copies * *granularity, kMaxStreamRate));
  }
  return FissionSpec{spec.substr(0, equals), *copies, *granularity};
}

bool replace_filter(Stream& s, const FissionSpec& spec) {
  if (s.is_filter()) {
    if (s.name != spec.filter) return false;
    s = fission_filter(s, spec.copies, spec.granularity);
    return true;
  }
  for (Stream& child : s.streams) {
    if (replace_filter(child, spec)) return true;
  }
  return false;
}

}  // namespace

std::vector<FissionSpec> parse_fission_specs(const std::vector<std::string>& specs) {
  std::vector<FissionSpec> out;
  std::set<std::string> seen;
  for (const std::string& text : specs) {
    out.push_back(parse_fission_spec(text));
    if (!seen.insert(out.back().filter).second) {
      throw Error(
          fmt::format("--fission \"{}\": filter \"{}\" is split by an earlier --fission too", text,
                      out.back().filter));
    }
  }
  return out;
}

void apply_fission(Stream& root, const FissionSpec& spec, const std::string& origin) {
  if (!replace_filter(root, spec)) {
    throw Error(fmt::format("--fission {}={}:{}: {} has no filter \"{}\" to split", spec.filter,
                            spec.copies, spec.granularity, origin, spec.filter));
  }
}

Stream fission_filter(const Stream& f, int64_t copies, int64_t granularity) {
  if (!f.is_filter() || f.op != FilterOp::kModel || !f.graph) fail(f, "not a model filter");
  if (copies < 1 || granularity < 1) {
    fail(f, fmt::format("copies {} and granularity {} must be positive", copies, granularity));
  }
  if (f.peek != f.pop)
    fail(f, fmt::format("it peeks {} but pops {}: not stateless", f.peek, f.pop));
  if (f.graph->inputs().size() != 1 || f.graph->outputs().size() != 1) {
    fail(f, "only models with one input and one output are split");
  }
  const Value& in = f.graph->value(f.graph->inputs()[0]);
  const Value& out = f.graph->value(f.graph->outputs()[0]);
  if (!in.shape.is_static() || in.shape.rank() == 0 || in.shape.dims[0].size != f.pop) {
    fail(f, fmt::format("input {} does not have its {} popped rows on axis 0",
                        print_type(in.dtype, in.shape), f.pop));
  }
  if (!out.shape.is_static() || out.shape.rank() == 0 || out.shape.dims[0].size != f.push) {
    fail(f, fmt::format("output {} does not have its {} pushed rows on axis 0",
                        print_type(out.dtype, out.shape), f.push));
  }
  if (f.push != f.pop) fail(f, fmt::format("pops {} rows but pushes {}", f.pop, f.push));
  const std::shared_ptr<const Graph> part = with_rows(f, granularity);
  Stream sj;
  sj.kind = StreamKind::kSplitJoin;
  sj.name = f.name + "_fission";
  sj.split.kind = SplitKind::kRoundRobin;
  sj.split.weights.assign(copies, granularity);
  sj.join.weights.assign(copies, granularity);
  for (int64_t c = 0; c < copies; ++c) {
    Stream copy = f;
    copy.name = fmt::format("{}_{}", f.name, c);
    copy.pop = copy.peek = copy.push = granularity;
    copy.graph = part;
    copy.model = f.model;
    sj.streams.push_back(std::move(copy));
  }
  return sj;
}

}  // namespace cleave
