// Staging buffers: one per slot and thread, shared by the kernels the thread runs.
#include "runtime/kernels/staging.h"

#include <gtest/gtest.h>

#include <thread>

namespace cleave {
namespace {

// Runs `check` on a thread of its own, whose slots start empty.
template <typename Check>
void on_fresh_thread(Check check) {
  std::thread thread(check);
  thread.join();
}

TEST(Staging, ASlotIsOneBufferGrownToTheLargestSizeAsked) {
  on_fresh_thread([] {
    EXPECT_EQ(thread_staging_bytes(), 0u);
    std::byte* large = staging_buffer(StagingSlot::kOutput, 3000);
    EXPECT_EQ(staging_buffer(StagingSlot::kOutput, 1000), large) << "a smaller ask reuses it";
    EXPECT_EQ(thread_staging_bytes(), 3000u);
    staging_buffer(StagingSlot::kOutput, 5000);
    EXPECT_EQ(thread_staging_bytes(), 5000u) << "grown, not added to";
  });
}

TEST(Staging, SlotsAreApartSoAKernelMayHoldAnInputAndAnOutput) {
  on_fresh_thread([] {
    std::byte* input = staging_buffer(StagingSlot::kInput, 4096);
    std::byte* output = staging_buffer(StagingSlot::kOutput, 4096);
    EXPECT_NE(input, output);
    EXPECT_EQ(thread_staging_bytes(), 8192u);
  });
}

TEST(Staging, EachThreadHasItsOwn) {
  std::byte* mine = staging_buffer(StagingSlot::kWeights, 64);
  on_fresh_thread([mine] { EXPECT_NE(staging_buffer(StagingSlot::kWeights, 64), mine); });
}

}  // namespace
}  // namespace cleave
