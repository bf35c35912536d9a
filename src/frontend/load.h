// The front half of every cleave command: model file in, verified and simplified Graph out.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "onnx/onnx_import.h"

namespace cleave {

/// `--shape name=1,3,224,224` settings.
using InputShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// Parses "name=d0,d1,..." strings; throws Error on a malformed one.
InputShapes parse_input_shapes(const std::vector<std::string>& specs);

struct LoadOptions {
  InputShapes shapes;                 ///< Fix symbolic (or replace) input dims.
  bool require_static_inputs = true;  ///< Refuse inputs whose dims are still symbolic.
  bool optimize = true;               ///< Run the graph passes.
  /// Write static loops and RNNs out as per-step nodes before the passes (unroll_static_loops),
  /// so folding and fusions see the steps: what a model converted to a stream needs.
  bool unroll_loops = false;
  /// The rewrites made for cleave's own runtime, not for export: fused activations and
  /// epilogues, and channel-scale folding (see OptimizeOptions).
  bool fuse_activations = true;
  /// With `optimize` off: only the runtime fusions (Conv activations and sums, layer norms,
  /// MatMul epilogues), which put back the fused nodes to_onnx wrote as standard ones. A graph
  /// cleave optimized and exported (a split's partitioned.onnx) then loads node for node as it
  /// was planned.
  bool fuse_exported_forms = false;
  std::function<void(const std::string&)> log;  ///< One line per step; may be empty.
  /// As ImportOptions::unread_external: external-data initializers are left unread. Only with
  /// optimize off (the passes may need weight values) and no `shapes` (re-inference writes
  /// the initializers out).
  std::map<std::string, ExternalWeight>* unread_external = nullptr;
  /// Every weight of at least 4 KiB, embedded or external, is left unread: its value keeps
  /// its type and dims (the sizes a plan needs) without bytes, and the graph passes rewrite
  /// such weights as sizes only, so the graph has the structure it has when loaded whole. For
  /// planning on paper (`cleave plan --simulate`) a model larger than this host's memory.
  bool weights_unread = false;
};

/// Imports, fixes input shapes, re-infers shapes, verifies and optimizes a model, logging what
/// each step changed. Errors name the file and the input or node concerned. The same as
/// specialize_model(import_model(path, options), options, path).
Graph load_model(const std::string& path, const LoadOptions& options = {});

/// The first half of load_model: the model as its file declares it (symbolic dims kept).
Graph import_model(const std::string& path, const LoadOptions& options = {});
/// import_model of a model held in memory; `origin` names it in errors.
Graph import_model_bytes(std::string_view bytes, const std::string& origin,
                         const LoadOptions& options = {});

/// The second half of load_model on an imported graph: options.shapes fixed, shapes
/// re-inferred, verified, optimized. A session runs it once per input shape on a copy of the
/// imported graph (copies share the weights' bytes).
Graph specialize_model(Graph graph, const LoadOptions& options, const std::string& origin);

/// Sets the dims of the named graph inputs. Throws Error naming the input for an unknown
/// name, a rank that differs from the model's, or a dim that contradicts a fixed one.
void set_input_shapes(Graph& graph, const InputShapes& shapes, const std::string& origin);

/// Re-runs ONNX shape inference over the graph so intermediate shapes follow the inputs.
void infer_shapes(Graph& graph, const std::string& origin);

}  // namespace cleave
