// Where a node's outputs go when an in-place Concat placement puts them inside a shared buffer.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/buffer_pool.h"
#include "runtime/concat_placement.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

/// Input names with their types and shapes: an in-place Concat placement holds only for the
/// shapes whose kernels it was planned from.
std::string input_shape_signature(const std::map<std::string, Tensor>& inputs);

/// Sets `placed[i]` to a view into its shared Concat buffer for every output of a node that
/// `placement` puts in one (acquiring the buffer from `pool` for the first writer; `shared` is
/// indexed by root ValueId), leaving the others empty. Returns whether any output is placed.
bool place_outputs(const ConcatPlacement& placement, const std::vector<ValueId>& outputs,
                   const std::vector<OutputSpec>& specs,
                   std::vector<std::shared_ptr<Buffer>>& shared, BufferPool& pool,
                   std::vector<Tensor>& placed);

}  // namespace cleave
