// Control flow: If, Loop and Scan run their bodies as sub-graphs on a nested executor.
#include <fmt/core.h>

#include <cstring>

#include <map>

#include "ir/scope.h"
#include "runtime/executor.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

// Iterations a Loop with neither a trip count nor a condition may make before it is refused.
constexpr int64_t kMaxIterations = int64_t{1} << 24;

// A body graph ready to run, and the outer values it reads (make_captures_explicit appended
// them to the node's inputs), handed to it as inputs of its own.
struct Body {
  std::unique_ptr<Executor> executor;
  SampleInputs captured;

  std::vector<Tensor> run(const std::vector<Tensor>& values) const {
    SampleInputs inputs = captured;
    const Graph& graph = executor->graph();
    const std::size_t own = graph.inputs().size() - captured.size();
    for (std::size_t i = 0; i < own && i < values.size(); ++i)
      inputs[graph.value(graph.inputs()[i]).name] = values[i];
    return executor->run(inputs);
  }
};

Body make_body(const KernelContext& context, const char* attribute) {
  const Attribute* body = context.node.attribute(attribute);
  if (!body || !body->g) {
    throw Error(fmt::format("{}: expected a graph attribute '{}'", context.where(), attribute));
  }
  std::map<std::string, const Tensor*, std::less<>> outer;
  if (const Attribute* names = context.node.attribute(kCapturesAttribute)) {
    const std::size_t first = context.inputs.size() - names->strings.size();
    for (std::size_t j = 0; j < names->strings.size(); ++j)
      outer[names->strings[j]] = context.inputs.at(first + j);
  }
  Graph graph = *body->g;
  graph.opset_imports = context.graph.opset_imports;
  Body result;
  std::vector<ValueId> inputs = graph.inputs();
  for (const std::string& name : outer_scope_names(graph)) {
    auto found = outer.find(name);
    if (found == outer.end() || !found->second) {
      throw UnsupportedError(fmt::format(
          "{}: its body '{}' reads '{}' from the enclosing graph, which the node was not given",
          context.where(), attribute, name));
    }
    const Tensor& value = *found->second;
    if (std::optional<ValueId> local = graph.find_value(name)) {
      if (graph.value(*local).dtype == DataType::kUndefined)
        graph.value(*local).dtype = value.dtype();
      inputs.push_back(*local);
    } else {
      // Read only by a body nested in this one: a value here, captured again below.
      inputs.push_back(graph.add_value(name, value.dtype(), Shape::of(value.shape())));
    }
    result.captured[name] = value;
  }
  graph.set_inputs(inputs);
  make_captures_explicit(graph);
  ExecutorOptions options;
  options.threads = context.threads;
  result.executor = std::make_unique<Executor>(graph, options);
  return result;
}

// The node's own inputs, without the captures appended after them.
std::size_t own_inputs(const KernelContext& context) {
  return context.inputs.size() - captured_input_count(context.node);
}

Tensor copy_of(const Tensor& tensor) {
  Tensor copy = Tensor::allocate_uninitialised(tensor.dtype(), tensor.shape());
  if (tensor.byte_size() > 0) std::memcpy(copy.raw(), tensor.raw(), tensor.byte_size());
  return copy;
}

// The slice at `index` along `axis`, that axis removed.
Tensor slice_along(const Tensor& tensor, int64_t axis, int64_t index) {
  std::vector<int64_t> shape = tensor.shape();
  const int64_t length = shape[axis];
  shape.erase(shape.begin() + axis);
  Tensor slice = Tensor::allocate_uninitialised(tensor.dtype(), shape);  // Copied in whole.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= tensor.dim(d);
  const std::size_t inner = slice.byte_size() / std::max<int64_t>(outer, 1);
  const auto* source = static_cast<const std::byte*>(tensor.raw());
  auto* target = static_cast<std::byte*>(slice.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(target + o * inner, source + (o * length + index) * inner, inner);
  return slice;
}

// Stacks equally shaped slices along a new axis `axis` (reversed when asked).
Tensor stack(const KernelContext& context, const std::vector<Tensor>& slices, int64_t axis,
             bool reverse, const Tensor* like) {
  if (slices.empty()) {
    std::vector<int64_t> shape = like ? like->shape() : std::vector<int64_t>{};
    shape.insert(shape.begin(), 0);
    return Tensor::allocate(like ? like->dtype() : DataType::kFloat, shape);
  }
  const Tensor& first = slices.front();
  const auto rank = static_cast<int64_t>(first.rank());
  axis = shape::normalize_axis(context, axis, rank + 1, "scan output axis");
  std::vector<int64_t> shape = first.shape();
  shape.insert(shape.begin() + axis, static_cast<int64_t>(slices.size()));
  Tensor out = Tensor::allocate_uninitialised(first.dtype(), shape);  // Every slice's chunks.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  const std::size_t chunk = first.byte_size() / std::max<int64_t>(outer, 1);
  auto* target = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (std::size_t s = 0; s < slices.size(); ++s) {
      const Tensor& slice = slices[reverse ? slices.size() - 1 - s : s];
      if (slice.shape() != first.shape()) {
        throw Error(fmt::format("{}: scan outputs change shape between iterations ({} then {})",
                                context.where(), first.describe(), slice.describe()));
      }
      std::memcpy(target, static_cast<const std::byte*>(slice.raw()) + o * chunk, chunk);
      target += chunk;
    }
  }
  return out;
}

std::unique_ptr<Kernel> create_if(const KernelContext& context) {
  const bool condition = context.input(0).to_double_vector().at(0) != 0;
  const Body body = make_body(context, condition ? "then_branch" : "else_branch");
  std::vector<Tensor> outputs = body.run({});
  for (Tensor& output : outputs) output = copy_of(output);
  return std::make_unique<shape::ComputedKernel>(std::move(outputs));
}

std::unique_ptr<Kernel> create_loop(const KernelContext& context) {
  const Body body = make_body(context, "body");
  const bool has_trips = context.has_input(0) && context.input(0).element_count() > 0;
  const int64_t trips = has_trips ? shape::scalar_int_input(context, 0, "M") : kMaxIterations;
  const bool has_condition = context.has_input(1) && context.input(1).element_count() > 0;
  bool condition = !has_condition || context.input(1).to_double_vector().at(0) != 0;
  std::vector<Tensor> carried;
  for (std::size_t i = 2; i < own_inputs(context); ++i) carried.push_back(context.input(i));
  const std::size_t scans = context.node.outputs.size() - carried.size();
  std::vector<std::vector<Tensor>> scanned(scans);
  if (!has_trips && !has_condition) {
    throw UnsupportedError(fmt::format(
        "{}: a Loop with neither a trip count nor a condition never ends", context.where()));
  }
  int64_t i = 0;
  for (; i < trips && condition; ++i) {
    std::vector<Tensor> in{Tensor::allocate(DataType::kInt64, {}),
                           Tensor::allocate(DataType::kBool, {})};
    in[0].data<int64_t>()[0] = i;
    in[1].data<uint8_t>()[0] = condition ? 1 : 0;
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Tensor> out = body.run(in);
    if (out.size() != 1 + carried.size() + scans) {
      throw Error(fmt::format("{}: the body gives {} outputs, expected {}", context.where(),
                              out.size(), 1 + carried.size() + scans));
    }
    condition = out[0].to_double_vector().at(0) != 0;
    for (std::size_t c = 0; c < carried.size(); ++c) carried[c] = copy_of(out[1 + c]);
    for (std::size_t s = 0; s < scans; ++s)
      scanned[s].push_back(copy_of(out[1 + carried.size() + s]));
  }
  if (i == kMaxIterations && condition) {
    throw Error(fmt::format("{}: the loop ran {} iterations without its condition turning false",
                            context.where(), kMaxIterations));
  }
  std::vector<Tensor> results;
  for (Tensor& value : carried) results.push_back(copy_of(value));
  for (auto& slices : scanned) results.push_back(stack(context, slices, 0, false, nullptr));
  return std::make_unique<shape::ComputedKernel>(std::move(results));
}

// One scan: the states carried through the steps, and the scan inputs sliced along their axes.
struct ScanSpec {
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
  int64_t outputs = 0;
};

std::vector<Tensor> scan_once(const KernelContext& context, const Body& body,
                              std::vector<Tensor> carried, const std::vector<Tensor>& scans,
                              const ScanSpec& spec) {
  int64_t length = -1;
  std::vector<int64_t> axes;
  for (std::size_t k = 0; k < scans.size(); ++k) {
    const int64_t axis =
        shape::normalize_axis(context, spec.in_axes[k], static_cast<int64_t>(scans[k].rank()));
    if (length >= 0 && scans[k].dim(axis) != length) {
      throw Error(fmt::format("{}: scan inputs differ in length ({} and {})", context.where(),
                              length, scans[k].dim(axis)));
    }
    length = scans[k].dim(axis);
    axes.push_back(axis);
  }
  const std::size_t states = carried.size();
  std::vector<std::vector<Tensor>> scanned(spec.outputs);
  for (int64_t step = 0; step < length; ++step) {
    std::vector<Tensor> in = carried;
    for (std::size_t k = 0; k < scans.size(); ++k)
      in.push_back(slice_along(scans[k], axes[k], spec.in_reverse[k] ? length - 1 - step : step));
    std::vector<Tensor> out = body.run(in);
    for (std::size_t s = 0; s < states; ++s) carried[s] = copy_of(out[s]);
    for (int64_t o = 0; o < spec.outputs; ++o) scanned[o].push_back(copy_of(out[states + o]));
  }
  std::vector<Tensor> results = std::move(carried);
  for (int64_t o = 0; o < spec.outputs; ++o)
    results.push_back(
        stack(context, scanned[o], spec.out_axes[o], spec.out_reverse[o] != 0, nullptr));
  return results;
}

std::unique_ptr<Kernel> create_scan(const KernelContext& context) {
  const Body body = make_body(context, "body");
  const int64_t scan_inputs = context.node.int_attribute("num_scan_inputs", 0);
  const auto inputs = static_cast<int64_t>(own_inputs(context));
  const bool batched = context.opset < 9;  // Scan-8: sequence_lens first, then a batch axis.
  const int64_t first = batched ? 1 : 0;
  const int64_t states = inputs - first - scan_inputs;
  if (scan_inputs < 1 || states < 0) {
    throw Error(fmt::format("{}: num_scan_inputs {} does not fit its {} inputs", context.where(),
                            scan_inputs, inputs));
  }
  const auto ints = [&](const char* key, int64_t count) {
    std::vector<int64_t> values = context.node.ints_attribute(key);
    values.resize(count, 0);
    return values;
  };
  ScanSpec spec;
  spec.outputs = static_cast<int64_t>(context.node.outputs.size()) - states;
  spec.in_axes = ints("scan_input_axes", scan_inputs);
  spec.in_reverse = ints(batched ? "directions" : "scan_input_directions", scan_inputs);
  spec.out_axes = ints("scan_output_axes", spec.outputs);
  spec.out_reverse = ints("scan_output_directions", spec.outputs);
  std::vector<Tensor> carried, scans;
  for (int64_t s = 0; s < states; ++s) carried.push_back(context.input(first + s));
  for (int64_t k = 0; k < scan_inputs; ++k) scans.push_back(context.input(first + states + k));
  if (!batched) {
    return std::make_unique<shape::ComputedKernel>(
        scan_once(context, body, std::move(carried), scans, spec));
  }
  // Scan-8 scans each batch entry on its own; sequences shorter than the axis are not run.
  const int64_t batch = scans.front().dim(0);
  if (context.has_input(0)) {
    for (int64_t length : context.input(0).to_int64_vector()) {
      if (length != scans.front().dim(1)) {
        throw UnsupportedError(
            fmt::format("{}: sequence_lens other than the full length ({}) are not supported",
                        context.where(), scans.front().dim(1)));
      }
    }
  }
  std::vector<std::vector<Tensor>> per_output(states + spec.outputs);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> entry_states, entry_scans;
    for (const Tensor& state : carried) entry_states.push_back(slice_along(state, 0, b));
    for (const Tensor& scan : scans) entry_scans.push_back(slice_along(scan, 0, b));
    std::vector<Tensor> results = scan_once(context, body, entry_states, entry_scans, spec);
    for (std::size_t r = 0; r < results.size(); ++r) per_output[r].push_back(std::move(results[r]));
  }
  std::vector<Tensor> stacked;
  for (const auto& entries : per_output)
    stacked.push_back(stack(context, entries, 0, false, nullptr));
  return std::make_unique<shape::ComputedKernel>(std::move(stacked));
}

}  // namespace

void register_control_flow_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "If", create_if, shape::kMovableTypes);
  shape::add_kernel(registry, "Loop", create_loop, shape::kMovableTypes);
  shape::add_kernel(registry, "Scan", create_scan, shape::kMovableTypes);
}

}  // namespace cleave
