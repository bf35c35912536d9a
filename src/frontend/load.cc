// Model loading: the recipe every command follows before planning or running a model.
#include "frontend/load.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <limits>
#include <map>

#include "frontend/shape_completion.h"
#include "ir/scope.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "passes/loop_unrolling.h"
#include "passes/optimize.h"
#include "runtime/kernel.h"

namespace cleave {

namespace {

void say(const LoadOptions& options, const std::string& line) {
  if (options.log) options.log(line);
}

// The graph for ONNX's inference, its large weights as typed inputs: they feed no shape
// computation, and so cost inference nothing to copy (vit_b_16's 330 MB did: 2.4 s; vgg16 held
// a second copy of its 528 MB of weights at its peak). Unread weights have no bytes to write.
onnx::ModelProto without_large_weights(const Graph& graph) {
  ExportOptions options;
  options.weights_as_inputs_above = 1024;  // Elements: shape constants stay.
  return to_onnx(graph, options);
}

void require_static_inputs(const Graph& graph, const std::string& origin) {
  for (ValueId id : graph.inputs()) {
    const Value& v = graph.value(id);
    if (v.shape.is_static()) continue;
    std::string what = v.shape.rank_known ? "has symbolic or unknown dims" : "has an unknown rank";
    throw Error(fmt::format("{}: input '{}' {} ({}); fix them with --shape {}=<d0,d1,...>", origin,
                            v.name, what, print_type(v.dtype, v.shape), v.name));
  }
}

}  // namespace

InputShapes parse_input_shapes(const std::vector<std::string>& specs) {
  InputShapes shapes;
  for (const std::string& spec : specs) {
    auto equals = spec.rfind('=');
    if (equals == std::string::npos || equals == 0) {
      throw Error(fmt::format("--shape '{}': expected name=d0,d1,...", spec));
    }
    std::vector<int64_t> dims;
    std::string_view rest(spec);
    rest.remove_prefix(equals + 1);
    while (!rest.empty()) {
      int64_t dim = 0;
      auto result = std::from_chars(rest.data(), rest.data() + rest.size(), dim);
      if (result.ec != std::errc() || dim < 0) {
        throw Error(fmt::format("--shape '{}': dims must be non-negative integers", spec));
      }
      rest.remove_prefix(result.ptr - rest.data());
      if (!rest.empty()) {
        if (rest.front() != ',')
          throw Error(fmt::format("--shape '{}': expected ',' between dims", spec));
        rest.remove_prefix(1);
      }
      dims.push_back(dim);
    }
    shapes.emplace_back(spec.substr(0, equals), std::move(dims));
  }
  return shapes;
}

void set_input_shapes(Graph& graph, const InputShapes& shapes, const std::string& origin) {
  for (const auto& [name, dims] : shapes) {
    auto id = graph.find_value(name);
    if (!id || !graph.value(*id).is_graph_input || graph.value(*id).initializer) {
      std::vector<std::string> names;
      for (ValueId input : graph.inputs()) names.push_back(graph.value(input).name);
      throw Error(fmt::format("{}: --shape names '{}', which is not an input; inputs are: {}",
                              origin, name, fmt::join(names, ", ")));
    }
    Value& v = graph.value(*id);
    if (v.shape.rank_known && v.shape.rank() != dims.size()) {
      throw Error(fmt::format("{}: input '{}' has rank {} ({}), --shape gives {} dims", origin,
                              name, v.shape.rank(), print_type(v.dtype, v.shape), dims.size()));
    }
    for (std::size_t axis = 0; v.shape.rank_known && axis < dims.size(); ++axis) {
      const Dim& dim = v.shape.dims[axis];
      if (dim.is_known() && dim.size != dims[axis]) {
        throw Error(
            fmt::format("{}: input '{}' dim {} is fixed to {} by the model, --shape gives {}",
                        origin, name, axis, dim.size, dims[axis]));
      }
    }
    v.shape = Shape::of(dims);
  }
}

void infer_shapes(Graph& graph, const std::string& origin) {
  // Inference restarts from the declared inputs: drop the intermediate shapes of the old dims.
  for (NodeId id : graph.node_ids()) {
    for (ValueId output : graph.node(id).outputs) {
      if (!graph.value(output).is_graph_output) graph.value(output).shape = Shape();
    }
  }
  Graph inferred = import_onnx(without_large_weights(graph), origin);
  for (std::size_t id = 0; id < graph.value_capacity(); ++id) {
    Value& v = graph.value(static_cast<ValueId>(id));
    auto match = inferred.find_value(v.name);
    if (!match) continue;
    const Value& fresh = inferred.value(*match);
    if (fresh.shape.rank_known) v.shape = fresh.shape;
    if (fresh.dtype != DataType::kUndefined) v.dtype = fresh.dtype;
  }
}

namespace {

// Whether some node's output has no static shape although every graph input has one: folding
// turned a computed size (shufflenet's x.chunk(2): Shape, Gather, Div, Mul) into a constant
// after import's inference had given up on it.
bool shapes_left_open(const Graph& graph) {
  for (ValueId input : graph.inputs()) {
    if (!graph.value(input).initializer && !graph.value(input).shape.is_static()) return false;
  }
  for (NodeId id : graph.node_ids()) {
    for (ValueId output : graph.node(id).outputs) {
      if (output != kNoValue && !graph.value(output).shape.is_static()) return true;
    }
  }
  return false;
}

bool has_domain_kernel(const std::string& domain, const std::string& op_type);

// Infers the shapes still open once more, on the folded graph; keeps every shape known. The
// graph may hold the com.microsoft operators cleave's own passes write (QDQ fusion's QGemm):
// ONNX's inference passes over them, and the shapes kernels gave their outputs go in as
// declared, so the values after them are inferred too.
int complete_shapes(Graph& graph, const std::string& origin) {
  ImportOptions import;
  import.runs_domain_op = has_domain_kernel;
  Graph inferred = import_onnx(without_large_weights(graph), origin, import);
  int completed = 0;
  for (NodeId id : graph.node_ids()) {
    for (ValueId output : graph.node(id).outputs) {
      if (output == kNoValue) continue;
      Value& v = graph.value(output);
      if (v.shape.is_static()) continue;
      auto match = inferred.find_value(v.name);
      if (!match || !inferred.value(*match).shape.is_static()) continue;
      v.shape = inferred.value(*match).shape;
      if (v.dtype == DataType::kUndefined) v.dtype = inferred.value(*match).dtype;
      ++completed;
    }
  }
  return completed;
}

// Alternates shape inference with folding until no open shape closes: each can make more
// of the other possible. Swin pads each block's input by sizes computed from its shape and
// reshapes by the padded shape, one block after another (39 rounds). A round asks the
// runtime's kernels first (milliseconds) and ONNX's inference (0.2 s on Swin) only when they
// find nothing, at most 8 times.
void complete_open_shapes(Graph& graph, const std::string& path,
                          const std::vector<std::string>& folding, const OptimizeOptions& optimize,
                          const LoadOptions& options) {
  constexpr int kMaxRounds = 256, kMaxInferenceRounds = 8;
  OptimizeOptions quiet = optimize;
  quiet.log = nullptr;
  int completed = 0, rounds = 0, inference_rounds = 0, folded = 0;
  while (rounds < kMaxRounds && shapes_left_open(graph)) {
    int found = complete_shapes_by_kernels(graph);
    if (found == 0 && inference_rounds++ < kMaxInferenceRounds) {
      try {
        found = complete_shapes(graph, path);
      } catch (const std::exception& e) {
        // The graph still runs: its kernels compute the shapes; only MPI ranks need them.
        say(options, fmt::format("shapes: not inferred again after folding: {}", e.what()));
      }
    }
    if (found == 0) break;
    completed += found;
    ++rounds;
    PassResult step = run_passes(graph, folding, quiet);
    folded += static_cast<int>(step.count("nodes folded") +
                               step.count("Shape nodes folded from static shapes"));
  }
  say(options, fmt::format("shapes: {} more made static after folding ({} rounds; {} more nodes "
                           "folded)",
                           completed, rounds, folded));
}

// Other domains' operators that cleave has kernels for: the com.microsoft ones its own QDQ
// fusions write, so that `cleave optimize`'s output runs again.
bool has_domain_kernel(const std::string& domain, const std::string& op_type) {
  return KernelRegistry::global().find(domain, op_type, std::numeric_limits<int>::max()) != nullptr;
}

}  // namespace

Graph import_model(const std::string& path, const LoadOptions& options) {
  if (options.unread_external && (options.optimize || !options.shapes.empty())) {
    throw Error(
        fmt::format("{}: weights can be left unread only without graph passes and "
                    "--shape",
                    path));
  }
  ImportOptions import;
  import.unread_external = options.unread_external;
  import.runs_domain_op = has_domain_kernel;
  std::map<std::string, ExternalWeight> never_read;  // Where the weights lie: not needed.
  if (options.weights_unread && !import.unread_external) import.unread_external = &never_read;
  Graph graph = import_onnx(path, import);
  say(options, fmt::format("import: {} nodes, {} initializers, opset {}", graph.node_count(),
                           graph.initializers().size(),
                           graph.opset_imports.count("") ? graph.opset_imports.at("") : 0));
  return graph;
}

Graph import_model_bytes(std::string_view bytes, const std::string& origin,
                         const LoadOptions& options) {
  ImportOptions import;
  import.runs_domain_op = has_domain_kernel;
  Graph graph = import_onnx_from_bytes(bytes, origin, import);
  say(options, fmt::format("import: {} nodes, {} initializers, opset {}", graph.node_count(),
                           graph.initializers().size(),
                           graph.opset_imports.count("") ? graph.opset_imports.at("") : 0));
  return graph;
}

Graph specialize_model(Graph graph, const LoadOptions& options, const std::string& origin) {
  if (!options.shapes.empty()) {
    set_input_shapes(graph, options.shapes, origin);
    infer_shapes(graph, origin);
    say(options,
        fmt::format("shapes: fixed {} input(s) and re-inferred shapes", options.shapes.size()));
  }
  if (options.require_static_inputs) require_static_inputs(graph, origin);
  verify_graph(graph);
  if (options.unroll_loops && has_loops(graph)) {
    const UnrollReport unrolled = unroll_static_loops(graph, origin);
    infer_shapes(graph, origin);
    verify_graph(graph);
    say(options, fmt::format("unroll: {} loop(s) and {} RNN(s) written out as {} steps ({} nodes)",
                             unrolled.loops, unrolled.rnns, unrolled.steps, unrolled.nodes_added));
  }

  if (const int nodes = make_captures_explicit(graph)) {
    say(options, fmt::format("captures: {} control-flow node(s) read outer values", nodes));
  }
  if (options.optimize) {
    OptimizeOptions optimize;
    optimize.fuse_activations = options.fuse_activations;
    optimize.fold_channel_scales = options.fuse_activations;
    optimize.log = [&](const std::string& line) { say(options, "optimize: " + line); };
    // Folding first: the shapes it makes computable are inferred before the fusions make the
    // graph something ONNX's inference no longer reads (Conv with an activation attribute).
    std::vector<std::string> passes = optimize_pass_list(optimize);
    const auto folded = std::find(passes.begin(), passes.end(), "dead-code") + 1;
    const std::vector<std::string> folding(passes.begin(), folded);
    run_passes(graph, folding, optimize);
    if (shapes_left_open(graph)) complete_open_shapes(graph, origin, folding, optimize, options);
    run_passes(graph, {folded, passes.end()}, optimize);
    verify_graph(graph);
  } else if (options.fuse_exported_forms) {
    OptimizeOptions optimize;
    optimize.log = [&](const std::string& line) { say(options, "fuse exported forms: " + line); };
    run_passes(graph,
               {"fuse-conv-activations", "fuse-layer-norms", "fuse-matmul-epilogues", "dead-code"},
               optimize);
    verify_graph(graph);
  }
  say(options, fmt::format("ready: {} nodes", graph.node_count()));
  return graph;
}

Graph load_model(const std::string& path, const LoadOptions& options) {
  return specialize_model(import_model(path, options), options, path);
}

}  // namespace cleave
