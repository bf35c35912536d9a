// Reading a `cleave split` folder's manifest.json (docs/formats.md, "Spatial split folders").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "spatial/manifest.h"

namespace cleave {

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

/// Reads DIR/manifest.json with read_manifest (spatial/manifest.h), which checks every field,
/// then confines every sub-model path to DIR (also through symbolic links). Throws Error naming
/// the file and the field.
RankSplitManifest read_split_manifest(const std::string& folder);

}  // namespace cleave
