// The JSON form of stream programs (docs/formats.md, "Stream programs"): read and write.
#pragma once

#include <string>
#include <string_view>

#include "stream/stream_ir.h"

namespace cleave {

struct StreamLoadOptions {
  bool load_models = true;  ///< Import each filter's ONNX model (paths relative to the file).
  bool verify = true;       ///< Run verify_stream after loading.
};

/// Reads a program file. Malformed JSON, missing or mistyped fields, unknown ops, cyclic
/// includes and models that disagree with their rates are Errors naming the file and stream.
StreamProgram load_stream_program(const std::string& path, const StreamLoadOptions& options = {});

/// Parses program text; `origin` names it in messages, `base_dir` resolves model paths.
StreamProgram parse_stream_program(std::string_view text, const std::string& origin,
                                   const std::string& base_dir,
                                   const StreamLoadOptions& options = {});

/// The JSON form of a stream (model filters keep their `model` path).
std::string stream_to_json(const Stream& root, int indent = 2);

}  // namespace cleave
