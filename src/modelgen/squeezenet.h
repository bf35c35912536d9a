// Generator of SqueezeNet-style models: a stem, fire modules with max pools, a conv classifier.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace cleave {

struct SqueezeNetOptions {
  int fire_modules = 8;           ///< SqueezeNet 1.1 has 8 (fire2 .. fire9).
  int64_t squeeze_channels = 16;  ///< Squeeze width of the first two fire modules.
  int64_t stem_channels = 64;
  int64_t height = 32;
  int64_t width = 32;
  int64_t batch = 1;
  int64_t classes = 10;
  uint64_t seed = 1;
};

/// The model as a Graph with random He-initialised weights and every shape set, following
/// SqueezeNet 1.1 at a configurable depth:
///
///   input f32[batch,3,H,W] -> stem Conv3x3 + Relu
///   fire i (i = 0, 1, ...): s = squeeze_channels * (1 + i/2) (integer division)
///     S = Relu(Conv1x1(X) to s channels)
///     Concat(Relu(Conv1x1(S) to 4s), Relu(Conv3x3(S) to 4s)) on channels
///   after fire 2 and fire 4 (1-based) when more follow: MaxPool 3x3, stride 2, pad 1
///   classifier: Relu(Conv1x1 to classes) -> GlobalAveragePool -> Flatten -> "logits"
///
/// Node count: 2 + 7 * fire_modules + pools + 4. Throws Error on non-positive sizes.
Graph generate_squeezenet(const SqueezeNetOptions& options);

}  // namespace cleave
