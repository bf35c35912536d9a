// The StreamIt generator: a stream program printed as code in the thesis's C++ builder form.
#pragma once

#include <string>

#include "stream/stream_ir.h"
#include "support/atomic_output.h"

namespace cleave {

struct StreamitCodegenSummary {
  int filters = 0;
  int pipelines = 0;
  int splitjoins = 0;
};

/// The builder code of `root` (StreamIt thesis ch. 4, Figs. 4.6, 4.9, 4.13, 4.20): one
/// function per filter returning `filter<tensor_t, tensor_t>(name, pop, peek, push, work)`,
/// whose work function peeks, pops and pushes its channel items (model filters call
/// `run_model`, built-ins move items), then one function per program building the tree with
/// `pipeline<>`, `duplicateSplitJoin<>` (`sj->add(join_weight, stream)`) and
/// `roundRobinSplitJoin<>` (`sj->add(split_weight, join_weight, stream)`).
/// `converted_from`, for a model's conversion, is printed as the line `// Converted from model
/// "PATH" (FINGERPRINT).`, which the reader (streamit_reader.h) returns.
std::string streamit_source(const Stream& root, StreamitCodegenSummary* summary = nullptr,
                            const std::string& converted_from = "",
                            const std::string& fingerprint = "");

/// The header the source includes: tensor_t, channel_t and the builders, enough for the
/// source to compile (`run_model` and `concat_items` are declared for a runtime to define).
std::string streamit_header();

/// Writes stream.cc, streamit.h and README.md into `out`. `origin` names where the program
/// came from (a model or a program file), for the README. For a model's conversion
/// (`fingerprint` of the model file not empty), each model filter's graph is written too, as
/// its `model` path (NAME.onnx) next to stream.cc, so that `cleave codegen MODEL --stream
/// DIR/stream.cc --lang cpp` can read the text back.
StreamitCodegenSummary emit_streamit(const Stream& root, const std::string& origin,
                                     AtomicFolder& out, const std::string& fingerprint = "");

}  // namespace cleave
