// The items a stream run reads from .npy files and the stacked output it writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"
#include "stream/executor.h"
#include "support/atomic_output.h"

namespace cleave {

/// Where a stream run's input items come from (`cleave stream run`).
struct StreamInputFiles {
  std::vector<std::string> specs;  ///< NAME=FILE.npy, as given to --input.
  std::string folder;              ///< --inputs DIR: every NAME.npy in it.
  int64_t items = 0;               ///< How many items to feed; 0: all of the files'.
};

/// The program input: one file for a program; for a model (`graph`) one per graph input,
/// interleaved round robin in graph input order. The items repeat to fill `files.items`.
/// Errors name `program` or the folder.
std::vector<Tensor> stream_input_items(const StreamInputFiles& files, const std::string& program,
                                       const Graph* graph);

/// Stages the run's output items stacked on a leading axis as `output.npy` in `folder`
/// (nothing when the run pushed no item).
void stage_stream_outputs(AtomicFolder& folder, const StreamRunResult& result);

}  // namespace cleave
