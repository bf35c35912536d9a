// Static buffer planning: byte offsets in one arena from each buffer's lifetime.
#pragma once

#include <cstddef>
#include <vector>

namespace cleave {

/// One buffer to place. Buffers of one region live on one timeline (a worker's step
/// positions, inclusive [first, last]) and may share bytes when their lifetimes do not
/// overlap; region -1 holds buffers live for the whole run (graph inputs and outputs, values
/// that cross workers), which never share.
struct BufferRequest {
  std::size_t bytes = 0;
  int region = -1;
  int first = 0;
  int last = 0;
};

struct BufferLayout {
  std::vector<std::size_t> offsets;  ///< Per request, bytes from the arena start.
  std::size_t arena_bytes = 0;
  std::size_t requested_bytes = 0;  ///< Sum of all requests: the arena without any sharing.
};

inline constexpr std::size_t kArenaAlignment = 64;

/// Places every request at a 64-byte-aligned offset: the whole-run region first, then each
/// region after the previous one, inside it largest buffers first at the lowest offset free
/// during their lifetime. Two requests of one region whose lifetimes overlap never overlap
/// in bytes.
BufferLayout plan_buffers(const std::vector<BufferRequest>& requests);

}  // namespace cleave
