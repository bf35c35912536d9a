// Fission of a row-wise filter into round-robin copies.
#include "stream/fission.h"

#include <fmt/core.h>

#include "ir/text.h"
#include "pipeline/load.h"  // infer_shapes

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

}  // namespace

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
