// Reading the StreamIt builder code that `cleave codegen --lang streamit` writes back into a
// program.
#pragma once

#include <string>
#include <string_view>

#include "stream/stream_ir.h"

namespace cleave {

struct StreamitText {
  StreamProgram program;
  /// For a model's conversion: the model's path and file fingerprint as the text records
  /// them ("fnv1a64:..."), so that a generator can refuse another model; empty otherwise.
  std::string converted_from;
  std::string converted_fingerprint;
};

/// Parses the subset of StreamIt builder code that streamit_source() prints: each filter's
/// comment (its op and arguments, item types), work function and `filter<>(name, pop, peek,
/// push, work)`, then the program function's `pipeline<>`, `duplicateSplitJoin<>` and
/// `roundRobinSplitJoin<>` tree. Model filters' `run_model("PATH", ...)` are loaded from PATH
/// relative to `base_dir` (unless `load_models` is false) and the program is verified, as a
/// program file would be. Throws Error "ORIGIN:LINE: ..." naming the line and what was
/// expected there, for text it cannot read.
StreamitText parse_streamit(std::string_view text, const std::string& origin,
                            const std::string& base_dir, bool load_models = true);

/// Reads a stream.cc file (base_dir: its folder); a missing file is an Error naming it.
StreamitText load_streamit(const std::string& path, bool load_models = true);

/// Whether `path` names StreamIt text (ends in .cc or .cpp) rather than a program JSON file.
bool is_streamit_path(const std::string& path);

}  // namespace cleave
