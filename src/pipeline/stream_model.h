// A stream program from its file or converted from an ONNX model, and the firing costs it runs by.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "ir/graph.h"
#include "stream/from_graph.h"
#include "stream/stages.h"
#include "stream/stream_ir.h"

namespace cleave {

/// A program file as it is, or a model converted (thesis ch. 4); `graph` keeps the model.
struct StreamSource {
  StreamProgram program;
  std::optional<StagedStream> staged;
  std::optional<StreamConversion> conversion;
  std::shared_ptr<Graph> graph;
};

/// How a model becomes a stream program (none of it applies to a program file).
struct StreamSourceOptions {
  bool by_reference = false;    ///< Shared values passed by reference, not replicated.
  int stages = 0;               ///< > 0: that many contiguous stages instead of one filter a node.
  std::string costs = "flops";  ///< What stages balance: flops, profile, static, analytical.
  InputShapes shapes;           ///< `--shape`: fixes the model's symbolic input dims.
};

/// Whether `path` names an ONNX model (converted) rather than a stream program file.
bool is_stream_model(const std::string& path);

/// Loads `path`: a stream program file, or an `.onnx` model loaded as every command loads one
/// (load_model: `shapes` fixed, loops unrolled, shapes completed, passes run) and converted to
/// one filter per node or, with `stages` > 0, to that many contiguous stages. Throws Error
/// when options meant for a model are given with a program file.
StreamSource load_stream_source(const std::string& path, const StreamSourceOptions& options);

/// Seconds of one firing per actor of `program` by `source` (see the definition); empty for
/// "measured", which leaves it to the executor.
std::vector<double> stream_firing_costs(const StreamSource& loaded, const StreamProgram& program,
                                        const std::string& source);

}  // namespace cleave
