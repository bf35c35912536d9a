// Buffer pool: reuse by liveness (a buffer only the pool holds is free), best fit.
#include "runtime/buffer_pool.h"

namespace cleave {

std::shared_ptr<Buffer> BufferPool::acquire(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  handed_out_ += bytes;
  Entry* best = nullptr;
  for (Entry& entry : entries_) {
    // use_count 1: only the pool holds it, so no live tensor reads it any more.
    if (entry.buffer.use_count() == 1 && entry.buffer->size() >= bytes &&
        entry.free_after <= handed_out_ && (!best || entry.buffer->size() < best->buffer->size())) {
      best = &entry;
    }
  }
  if (best) return best->buffer;
  entries_.push_back({std::make_shared<Buffer>(bytes)});
  reserved_ += bytes;
  return entries_.back().buffer;
}

void BufferPool::hold_back(const Buffer& buffer, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  for (Entry& entry : entries_) {
    if (entry.buffer.get() == &buffer) entry.free_after = handed_out_ + bytes;
  }
}

std::size_t BufferPool::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

}  // namespace cleave
