// Whether a stream program belongs to the model `cleave codegen` was given.
#pragma once

#include <string>

#include "stream/stream_ir.h"

namespace cleave {

/// Throws Error naming both files unless a model filter of `program` (read from
/// `program_path`) runs `model_path`: the same file, or one with the same bytes; also refuses,
/// naming the filter, a program that passes values by reference (`publishes`/`reads`), which
/// the code generators do not implement.
void check_program_runs_model(const StreamProgram& program, const std::string& program_path,
                              const std::string& model_path);

}  // namespace cleave
