// Input checks every executor makes before it runs.
#include "runtime/executor_interface.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "ir/text.h"

namespace cleave {

void check_inputs(const Graph& graph, const SampleInputs& inputs) {
  for (ValueId id : graph.inputs()) {
    const Value& v = graph.value(id);
    if (v.initializer) continue;
    auto it = inputs.find(v.name);
    if (it == inputs.end()) throw Error(fmt::format("graph input '{}' was not given", v.name));
    const Tensor& t = it->second;
    if (v.dtype != DataType::kUndefined && t.dtype() != v.dtype) {
      throw Error(fmt::format("input '{}': expected element type {}, got {}", v.name,
                              dtype_name(v.dtype), dtype_name(t.dtype())));
    }
    if (!v.shape.rank_known) continue;
    bool fits = t.rank() == v.shape.rank();
    for (std::size_t axis = 0; fits && axis < t.rank(); ++axis) {
      fits = !v.shape.dims[axis].is_known() || v.shape.dims[axis].size == t.dim(axis);
    }
    if (!fits) {
      throw Error(fmt::format("input '{}': expected shape {}, got {}", v.name,
                              print_type(v.dtype, v.shape), fmt::join(t.shape(), ",")));
    }
  }
  for (const auto& [name, tensor] : inputs) {
    auto id = graph.find_value(name);
    if (!id || !graph.value(*id).is_graph_input) {
      throw Error(fmt::format("'{}' is not an input of graph '{}'", name, graph.name));
    }
  }
}

}  // namespace cleave
