// Leaving a model's embedded weights on disk: their payloads become references into the file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cleave {

/// The serialized ModelProto `model` with each initializer of its main graph whose raw_data
/// holds at least `min_bytes` (and exactly what its dims and type need) turned into an
/// external-data reference to `file_name`, the model file itself, at the payload's offset.
/// Importing the result with ImportOptions::unread_external records where every such weight
/// lies without reading it, so a reader that needs only some (an MPI rank) reads just those.
/// The wire format is scanned with protobuf's CodedInputStream and the payloads are skipped,
/// never touched: `model` may be a memory map of a file much larger than memory. Anything the
/// scan does not understand is copied as it is, for the importer to judge; a truncated
/// message is an Error naming `origin`.
std::string refer_to_embedded_weights(std::string_view model, const std::string& file_name,
                                      const std::string& origin, std::size_t min_bytes = 4096);

/// import_onnx(path) for a reader of some weights: maps the file, refers to its embedded
/// weights (above) and returns the rewritten model, for import_onnx_from_bytes.
std::string model_without_embedded_weights(const std::string& path, std::size_t min_bytes = 4096);

}  // namespace cleave
