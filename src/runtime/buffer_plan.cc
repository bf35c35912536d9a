// Greedy-by-size offset assignment per region (a classic static memory planner).
#include "runtime/buffer_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace cleave {

namespace {

std::size_t align(std::size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

}  // namespace

BufferLayout plan_buffers(const std::vector<BufferRequest>& requests) {
  BufferLayout layout;
  layout.offsets.assign(requests.size(), 0);
  std::map<int, std::vector<std::size_t>> by_region;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    by_region[requests[r].region].push_back(r);
    layout.requested_bytes += align(requests[r].bytes);
  }
  std::size_t base = 0;
  for (auto& [region, members] : by_region) {
    std::size_t region_bytes = 0;
    if (region < 0) {
      for (std::size_t r : members) {
        layout.offsets[r] = base + region_bytes;
        region_bytes += align(requests[r].bytes);
      }
    } else {
      std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
        return requests[a].bytes > requests[b].bytes;
      });
      std::vector<std::size_t> placed;
      for (std::size_t r : members) {
        const BufferRequest& request = requests[r];
        // Byte ranges of placed buffers alive at the same time, by start offset.
        std::vector<std::pair<std::size_t, std::size_t>> busy;
        for (std::size_t other : placed) {
          const BufferRequest& o = requests[other];
          if (o.last < request.first || request.last < o.first) continue;
          const std::size_t start = layout.offsets[other] - base;
          busy.emplace_back(start, start + align(o.bytes));
        }
        std::sort(busy.begin(), busy.end());
        std::size_t offset = 0;
        for (const auto& [start, end] : busy) {
          if (offset + align(request.bytes) <= start) break;
          offset = std::max(offset, end);
        }
        layout.offsets[r] = base + offset;
        region_bytes = std::max(region_bytes, offset + align(request.bytes));
        placed.push_back(r);
      }
    }
    base += region_bytes;
  }
  layout.arena_bytes = base;
  return layout;
}

}  // namespace cleave
