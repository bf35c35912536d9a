// Per-thread staging buffers of the kernels (staging.h).
#include "runtime/kernels/staging.h"

#include <array>
#include <memory>

#include "runtime/tensor.h"

namespace cleave {

namespace {

constexpr std::size_t kSlots = static_cast<std::size_t>(StagingSlot::kSecondSums) + 1;
thread_local std::array<std::unique_ptr<Buffer>, kSlots> staging;

}  // namespace

std::byte* staging_buffer(StagingSlot slot, std::size_t bytes) {
  std::unique_ptr<Buffer>& buffer = staging[static_cast<std::size_t>(slot)];
  if (!buffer || buffer->size() < bytes) {
    buffer.reset();  // The old one goes before the new one is taken.
    buffer = std::make_unique<Buffer>(bytes);
  }
  return buffer->data();
}

Tensor staging_tensor(StagingSlot slot, DataType dtype, const std::vector<int64_t>& shape,
                      const std::optional<dnnl::memory::desc>& layout) {
  Tensor sized = Tensor::borrow(dtype, shape, nullptr);
  sized.set_layout(layout);
  Tensor staged = Tensor::borrow(dtype, shape, staging_buffer(slot, sized.byte_size()));
  staged.set_layout(layout);
  return staged;
}

std::size_t thread_staging_bytes() {
  std::size_t bytes = 0;
  for (const auto& buffer : staging) bytes += buffer ? buffer->size() : 0;
  return bytes;
}

}  // namespace cleave
