// libFuzzer target: arbitrary bytes into the ONNX importer, which may only fail with cleave::Error.
//
// Each input is imported without shape inference, then exported and re-imported, which must
// give an equal graph. An input that imports is imported once more with (isolated) ONNX shape
// inference, whose types then flow through the importer too. The input also goes the way a
// model file does (import_onnx(path)): its embedded weights turned into references into the
// file, which are recorded, not read.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "onnx/embedded_weights.h"
#include "onnx/graph_compare.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  cleave::ImportOptions plain;
  plain.infer_shapes = false;
  try {
    cleave::Graph graph = cleave::import_onnx_from_bytes(bytes, "fuzz input", plain);
    cleave::Graph again = cleave::import_onnx(cleave::to_onnx(graph), "fuzz export", plain);
    std::string difference;
    if (!cleave::graphs_equal(graph, again, &difference)) {
      std::fprintf(stderr, "round trip changed the graph: %s\n", difference.c_str());
      std::abort();
    }
    cleave::import_onnx_from_bytes(bytes, "fuzz input", cleave::ImportOptions{});
  } catch (const cleave::Error&) {
    // Rejected with a message: what bad input should get.
  }
  try {
    const std::string referred =
        cleave::refer_to_embedded_weights(bytes, "fuzz.onnx", "fuzz input", 16);
    std::map<std::string, cleave::ExternalWeight> unread;
    cleave::ImportOptions recording = plain;
    recording.unread_external = &unread;
    recording.external_data_folder = "/nonexistent";
    cleave::import_onnx_from_bytes(referred, "fuzz input", recording);
  } catch (const cleave::Error&) {
  }
  return 0;
}
