// Static buffer planning: lifetimes that do not overlap share bytes, others never do.
#include "runtime/buffer_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

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

TEST(BufferPlan, LargestFirstAtTheLowestFreeOffset) {
  // One region: a 4096-byte buffer alive over [0, 2], then smaller ones around it.
  std::vector<BufferRequest> requests = {
      {1000, 0, 0, 1}, {4096, 0, 0, 2}, {2000, 0, 2, 4}, {1000, 0, 3, 4}, {500, 0, 1, 3}};
  const BufferLayout layout = plan_buffers(requests);
  // By size (rounded to 64 bytes): the 4096 at 0; the 2000 after it (both alive at 2); the
  // 1000 of [0, 1] beside the 2000 (never alive together); the 1000 of [3, 4] at 0 (the 4096
  // is dead by then); the 500 of [1, 3] after everything alive with it.
  EXPECT_EQ(layout.offsets, (std::vector<std::size_t>{4096, 0, 4096, 0, 6144}));
  EXPECT_EQ(layout.arena_bytes, 6656u);
  EXPECT_EQ(layout.requested_bytes, 1024u + 4096u + 2048u + 1024u + 512u);
}

TEST(BufferPlan, RandomRequestsNeverShareBytesWhileAliveTogether) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<BufferRequest> requests;
    const int count = 1 + static_cast<int>(random() % 40);
    for (int i = 0; i < count; ++i) {
      const int first = static_cast<int>(random() % 30);
      requests.push_back({1 + random() % 5000, static_cast<int>(random() % 3) - 1, first,
                          first + static_cast<int>(random() % 10)});
    }
    const BufferLayout layout = plan_buffers(requests);
    for (std::size_t a = 0; a < requests.size(); ++a) {
      ASSERT_EQ(layout.offsets[a] % kArenaAlignment, 0u);
      ASSERT_LE(layout.offsets[a] + requests[a].bytes, layout.arena_bytes);
      for (std::size_t b = a + 1; b < requests.size(); ++b) {
        const bool may_share =
            requests[a].region >= 0 && requests[a].region == requests[b].region &&
            (requests[a].last < requests[b].first || requests[b].last < requests[a].first);
        if (!may_share) {
          ASSERT_FALSE(bytes_overlap(layout, requests, a, b))
              << "trial " << trial << ": " << a << " and " << b;
        }
      }
    }
    ASSERT_LE(layout.arena_bytes, layout.requested_bytes);
  }
}

}  // namespace
}  // namespace cleave
