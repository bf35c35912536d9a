// Output placement: views into shared Concat buffers, acquired by the first writer.
#include "runtime/output_placement.h"

namespace cleave {

std::string input_shape_signature(const std::map<std::string, Tensor>& inputs) {
  std::string signature;
  for (const auto& [name, tensor] : inputs) signature += name + ":" + tensor.describe() + ";";
  return signature;
}

bool place_outputs(const ConcatPlacement& placement, const std::vector<ValueId>& outputs,
                   const std::vector<OutputSpec>& specs,
                   std::vector<std::shared_ptr<Buffer>>& shared, BufferPool& pool,
                   std::vector<Tensor>& placed) {
  placed.assign(outputs.size(), Tensor());
  bool any = false;
  for (std::size_t i = 0; i < outputs.size() && i < specs.size(); ++i) {
    const std::optional<BufferSlot>& slot = placement.slots[outputs[i]];
    if (!slot) continue;
    std::shared_ptr<Buffer>& buffer = shared[slot->root];
    if (!buffer) buffer = pool.acquire(placement.root_bytes[slot->root]);
    placed[i] = Tensor::view(specs[i].dtype, specs[i].shape, buffer, slot->byte_offset);
    placed[i].set_layout(specs[i].layout);
    // The root's own tensor keeps the buffer alive from here; the pool may reuse it once that
    // tensor and every view inside it are gone. (A Concat that runs after its root then gets a
    // fresh buffer, and its kernel copies: correct, only not in place.)
    if (slot->root == outputs[i]) buffer.reset();
    any = true;
  }
  return any;
}

}  // namespace cleave
