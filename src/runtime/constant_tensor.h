// Initializers as runtime tensors, shared by the sequential and the parallel executor.
#pragma once

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

/// A tensor that borrows initializer `id`'s bytes. Throws Error naming the initializer when it
/// holds no bytes the runtime can use (a STRING tensor, or one whose data was never loaded).
Tensor constant_tensor(const Graph& graph, ValueId id);

}  // namespace cleave
