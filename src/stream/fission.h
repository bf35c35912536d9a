// Data-parallel fission: a stateless filter over rows split into a round-robin split-join.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stream/stream_ir.h"

namespace cleave {

/// Replaces a model filter that maps `pop` rows to `push` rows (its model's inputs and
/// outputs have the rows on axis 0, pop == peek: stateless) by a split-join of `copies`
/// filters, each running the model re-shaped for `granularity` rows, dealt rows round robin
/// `granularity` at a time. Rows stay views of the items they came in, so when consecutive
/// rows sit side by side in one buffer a copy's window is a view, not a copy. Throws Error
/// naming the filter when it peeks, its tensors are not row-major over `pop` rows, or a
/// re-shaped model does not infer.
Stream fission_filter(const Stream& filter, int64_t copies, int64_t granularity);

/// One `--fission NAME=COPIES:GRANULARITY` of `cleave stream run`.
struct FissionSpec {
  std::string filter;
  int64_t copies = 0;
  int64_t granularity = 0;
};

/// Parses NAME=COPIES:GRANULARITY specs strictly: whole decimal integers, copies from 1 to
/// kMaxFissionCopies, granularity and copies x granularity (rows per firing of the
/// splitter) from 1 to kMaxStreamRate, each filter named once. Errors quote the spec.
std::vector<FissionSpec> parse_fission_specs(const std::vector<std::string>& specs);

/// Replaces the filter `spec.filter` of `root` by its fission (fission_filter); an Error
/// naming `origin` when the program has no filter of that name.
void apply_fission(Stream& root, const FissionSpec& spec, const std::string& origin);

}  // namespace cleave
