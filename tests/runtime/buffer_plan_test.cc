// Static buffer planning: lifetimes that do not overlap share bytes, others never do.
#include "runtime/buffer_plan.h"

#include <gtest/gtest.h>

namespace cleave {
namespace {

bool bytes_overlap(const BufferLayout& layout, const std::vector<BufferRequest>& requests,
                   std::size_t a, std::size_t b) {
  return layout.offsets[a] < layout.offsets[b] + requests[b].bytes &&
         layout.offsets[b] < layout.offsets[a] + requests[a].bytes;
}

TEST(BufferPlan, BuffersWithDisjointLifetimesShareBytes) {
  // A chain a -> b -> c on one worker: a is dead once b is written, so c can take a's place.
  std::vector<BufferRequest> requests = {{1024, 0, 0, 1}, {1024, 0, 1, 2}, {1024, 0, 2, 3}};
  BufferLayout layout = plan_buffers(requests);
  EXPECT_EQ(layout.arena_bytes, 2048u);
  EXPECT_EQ(layout.offsets[0], layout.offsets[2]);
  EXPECT_FALSE(bytes_overlap(layout, requests, 0, 1));
  EXPECT_FALSE(bytes_overlap(layout, requests, 1, 2));
}

TEST(BufferPlan, WholeRunBuffersAndOtherRegionsNeverShare) {
  std::vector<BufferRequest> requests = {
      {100, -1, 0, 0}, {100, -1, 0, 0}, {256, 0, 0, 0}, {256, 1, 5, 5}, {256, 1, 6, 6}};
  BufferLayout layout = plan_buffers(requests);
  for (std::size_t a = 0; a < requests.size(); ++a) {
    for (std::size_t b = a + 1; b < requests.size(); ++b) {
      if (a == 3 && b == 4) continue;  // One region, disjoint lifetimes: may share.
      EXPECT_FALSE(bytes_overlap(layout, requests, a, b)) << a << " and " << b;
    }
  }
  EXPECT_EQ(layout.offsets[3], layout.offsets[4]);
  // 100 rounds up to 128 per whole-run buffer; regions 0 and 1 need 256 each.
  EXPECT_EQ(layout.arena_bytes, 128u + 128u + 256u + 256u);
  EXPECT_EQ(layout.requested_bytes, 128u + 128u + 256u * 3);
}

TEST(BufferPlan, OffsetsAreAlignedAndOverlappingLifetimesKeptApart) {
  std::vector<BufferRequest> requests;
  for (int i = 0; i < 20; ++i) {
    requests.push_back({static_cast<std::size_t>(8 + 37 * i), 0, i % 7, i % 7 + 3});
  }
  BufferLayout layout = plan_buffers(requests);
  for (std::size_t a = 0; a < requests.size(); ++a) {
    EXPECT_EQ(layout.offsets[a] % kArenaAlignment, 0u);
    EXPECT_LE(layout.offsets[a] + requests[a].bytes, layout.arena_bytes);
    for (std::size_t b = a + 1; b < requests.size(); ++b) {
      const bool alive_together =
          !(requests[a].last < requests[b].first || requests[b].last < requests[a].first);
      if (alive_together) {
        EXPECT_FALSE(bytes_overlap(layout, requests, a, b)) << a << ", " << b;
      }
    }
  }
  EXPECT_LT(layout.arena_bytes, layout.requested_bytes);
}

}  // namespace
}  // namespace cleave
