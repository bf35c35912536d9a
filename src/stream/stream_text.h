// The text form of stream programs, printed like StreamIt source.
#pragma once

#include <string>

#include "stream/stream_ir.h"

namespace cleave {

/// Prints a stream as StreamIt-like code, e.g.
///
///     pipeline audio {
///       filter features(pop 1, peek 1, push 2) model "features.onnx" f32[160] -> f32[40];
///       splitjoin both {
///         split duplicate;
///         filter left(pop 1, peek 1, push 1) identity;
///         filter right(pop 1, peek 1, push 1) identity;
///         join roundrobin(1, 1);
///       }
///     }
std::string print_stream(const Stream& root);

}  // namespace cleave
