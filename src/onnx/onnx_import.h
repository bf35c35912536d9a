// Reads an ONNX model into a cleave Graph: value types, tensors, control-flow bodies.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace cleave {

/// Where an initializer's bytes lie in an external data file (already checked to be inside the
/// model's folder and long enough).
struct ExternalWeight {
  std::string file;  ///< Canonical path.
  uint64_t offset = 0;
  std::size_t bytes = 0;
};

struct ImportOptions {
  /// Runs ONNX shape inference to type the intermediate values. When it fails (unknown ops,
  /// inconsistent declarations) the model still imports, with only the declared types.
  bool infer_shapes = true;
  /// Runs shape inference in a child process (see onnx/shape_inference.h): ONNX 1.12 crashes
  /// on some hostile models. Turn off only for trusted models, to save the fork.
  bool isolate_shape_inference = true;
  /// Inference taking longer than this is abandoned (the model imports without it).
  double shape_inference_timeout_seconds = 120;
  /// Keeps nodes of domains other than the standard one (no cleave kernel runs them) instead
  /// of refusing them with UnsupportedError: for tools that only read or rewrite a model.
  bool other_domains = false;
  /// Keeps the nodes of other domains for which this answers true (a runtime that has their
  /// kernels: cleave's own passes write com.microsoft's QLinearAdd, QLinearConcat and QGemm),
  /// and refuses the rest; unset refuses all of them (unless `other_domains`).
  std::function<bool(const std::string& domain, const std::string& op_type)> runs_domain_op;
  /// Deepest nesting of control-flow bodies (If/Loop/Scan) accepted.
  int max_graph_depth = 64;
  /// Folder that external tensor data is read from; import_onnx(path) sets it to the model's
  /// folder. Empty refuses models with external data.
  std::string external_data_folder;
  /// The model's own file (import_onnx(path) sets it), whose embedded weights it reads as
  /// external data: a reference to it is accepted even when the file is a symbolic link out of
  /// the folder.
  std::string model_file;
  /// Non-null: initializers kept in external data files are checked but not read (their
  /// TensorData has no bytes); where each lies is recorded here by initializer name, so a
  /// reader that needs only some of them (an MPI rank) reads those with read_external_weight.
  std::map<std::string, ExternalWeight>* unread_external = nullptr;
};

/// Reads one recorded external initializer; `what` names it in errors.
std::shared_ptr<std::vector<std::byte>> read_external_weight(const ExternalWeight& weight,
                                                             const std::string& what);
/// Passes the bytes of one recorded external initializer to `piece` a bounded piece at a time
/// (to hash it without holding it).
void read_external_weight_in_pieces(
    const ExternalWeight& weight, const std::string& what,
    const std::function<void(const std::byte*, std::size_t)>& piece);

/// Reads the model file at `path`. Throws Error naming the file (and node or tensor) when the
/// file is unreadable, not an ONNX model, or inconsistent.
///
/// Representation choices:
/// - Each initializer is a value with `initializer` set; one that is also listed as a graph
///   input (IR version < 4 style) keeps `is_graph_input` too but is not in Graph::inputs().
/// - A body graph of If/Loop/Scan keeps each value it reads from an enclosing graph as a value
///   of its own that has no producer and is neither input nor initializer (see onnx/scope.h);
///   the enclosing graph gets such a value too when only a nested body reads it.
/// - An omitted optional node output ("") followed by a present one becomes a fresh value
///   named `cleave.omitted/<node>/<slot>` (see is_omitted_output); omitted trailing outputs are
///   dropped.
/// - Values of non-tensor type (sequence, map, optional, sparse) keep their TypeProto in
///   Value::opaque_type.
/// - Model-level functions, metadata properties and training info are not kept.
Graph import_onnx(const std::string& path, const ImportOptions& options = {});

/// Name prefix of the placeholder values that stand for omitted optional node outputs.
inline constexpr std::string_view kOmittedOutputPrefix = "cleave.omitted/";

/// True for a placeholder of an omitted optional output that nothing reads: export writes it
/// as "" again, so that ONNX does not compute it.
bool is_omitted_output(const Graph& graph, ValueId value);

/// Reads a serialized model held in memory; `origin` names it in error messages.
Graph import_onnx_from_bytes(std::string_view bytes, const std::string& origin,
                             const ImportOptions& options = {});

/// Converts a parsed model; `origin` names it in error messages.
Graph import_onnx(const onnx::ModelProto& model, const std::string& origin,
                  const ImportOptions& options = {});

/// Decodes one TensorProto (typed fields or raw_data; no external data); `what` names it in
/// errors. For test-data files such as the ONNX backend tests' input_0.pb.
TensorData tensor_from_onnx(const onnx::TensorProto& tensor, const std::string& what);

}  // namespace cleave
