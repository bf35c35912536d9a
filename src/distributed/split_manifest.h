// Reading a `cleave split` folder's manifest.json (docs/formats.md, "Spatial split folders").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// "fnv1a64:" + 16 hex digits of FNV-1a 64 over a file's bytes (defined in spatial/manifest.cc).
std::string file_fingerprint(const std::string& path);

/// One step of a machine: run a sub-model, send a region of a tensor, or receive one.
struct SplitStep {
  enum class Kind { kRun, kSend, kRecv } kind = Kind::kRun;
  std::string model;  ///< kRun: absolute path of the sub-model (checked to lie inside DIR).
  std::vector<std::string> inputs, outputs;         ///< kRun.
  int peer = -1;                                    ///< kSend: to; kRecv: from.
  std::string tensor;                               ///< kSend: the machine's tensor to cut.
  std::vector<std::pair<int64_t, int64_t>> region;  ///< kSend: [begin, end) per dimension.
  std::string name;                                 ///< kSend/kRecv: the receiver's name.
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int tag = -1;
};

struct SplitTensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  int machine = 0;  ///< Outputs: the machine that holds it at the end.
};

struct RankSplitManifest {
  std::string folder;
  std::string model;
  std::string fingerprint;
  int machines = 0;
  std::vector<SplitTensor> inputs, outputs;
  std::vector<std::vector<SplitStep>> steps;  ///< Per machine.
};

/// Reads DIR/manifest.json. Throws Error naming the file and the field for a wrong format or
/// version, a sub-model path outside DIR (absolute, or climbing out with ..), a send whose
/// region does not match its shape and bytes, a tag used twice, or a send without its recv.
RankSplitManifest read_split_manifest(const std::string& folder);

/// Manifest dtype names: float32, float16, float64, int8, uint8, int32, int64, bool.
DataType split_dtype(const std::string& name, const std::string& where);

}  // namespace cleave
