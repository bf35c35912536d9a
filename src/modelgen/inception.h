// Generator of Inception-style models: a stem, K four-branch blocks, a classifier.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace cleave {

struct InceptionOptions {
  int blocks = 3;         ///< Inception blocks after the stem.
  int64_t channels = 64;  ///< Channels of the stem and of every block's concatenated output.
  int64_t height = 32;    ///< Input spatial size; blocks keep it (stride 1, same padding).
  int64_t width = 32;
  int64_t batch = 1;
  int64_t classes = 10;
  bool double_3x3 = false;  ///< Third branch as two 3x3 convs instead of one 5x5.
  uint64_t seed = 1;
};

/// The model as a Graph with random He-initialised weights and every shape set:
///
///   input f32[batch,3,H,W] -> stem Conv3x3 + Relu
///   block b (input X):  b1 = Relu(Conv1x1(X))
///                       b2 = Relu(Conv3x3(Relu(Conv1x1(X))))
///                       b3 = Relu(Conv5x5(Relu(Conv1x1(X))))   (or two 3x3)
///                       b4 = Relu(Conv1x1(MaxPool3x3/s1(X)))
///                       Concat(b1, b2, b3, b4) on channels
///   GlobalAveragePool -> Flatten -> Gemm -> output "logits" f32[batch, classes]
///
/// Branch widths are channels/4 (the last branch takes the remainder) and the 1x1 reductions
/// in front of the 3x3 and 5x5 convs have max(1, channels/4) channels. Node count:
/// 2 + blocks * (14, or 16 with double_3x3) + 3. Throws Error on non-positive sizes.
Graph generate_inception(const InceptionOptions& options);

}  // namespace cleave
