// Activation buffers by liveness: best fit among free buffers, held back after a remote read.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/tensor.h"

namespace cleave {

/// Hands out activation buffers and takes them back when no tensor uses them any more, so a
/// run needs only as much memory as its live values (best fit among free buffers: the smallest
/// that fits, the oldest of equal sizes). A handed-out buffer stays valid after the pool is
/// gone.
class BufferPool {
 public:
  BufferPool();
  std::shared_ptr<Buffer> acquire(std::size_t bytes);
  /// Keeps `buffer` from being handed out again until the pool has handed out `bytes` more
  /// (ignored when the buffer is not this pool's). For a buffer another core has read:
  /// rewriting it while that core's cache still holds its lines costs several times a plain
  /// write.
  void hold_back(const Buffer& buffer, std::size_t bytes);
  /// Bytes held by the pool: the activation memory a run needed at its peak.
  std::size_t reserved_bytes() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cleave
