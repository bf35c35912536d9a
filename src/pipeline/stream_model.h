// A stream program from its file or converted from an ONNX model, and the firing costs it runs by.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// Loads `path`: a stream program file, or an `.onnx` model converted to one filter per node
/// (`by_reference`: shared values passed by reference) or, with `stages` > 0, to that many
/// contiguous stages balanced by `costs` (flops, or a cost table: profile, static, analytical).
StreamSource load_stream_source(const std::string& path, bool by_reference, int stages,
                                std::string costs);

/// Seconds of one firing per actor of `program` by `source` (see the definition); empty for
/// "measured", which leaves it to the executor.
std::vector<double> stream_firing_costs(const StreamSource& loaded, const StreamProgram& program,
                                        const std::string& source);

}  // namespace cleave
