// The activation buffer pool: best-fit reuse, and buffers held back after another core read them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/executor.h"

namespace cleave {
namespace {

TEST(BufferPool, AFreedBufferIsReusedAtOnce) {
  BufferPool pool;
  const Buffer* first = pool.acquire(1000).get();
  EXPECT_EQ(pool.acquire(1000).get(), first);
  EXPECT_EQ(pool.reserved_bytes(), 1000u);
}

TEST(BufferPool, ALiveBufferIsNeverHandedOutTwice) {
  BufferPool pool;
  auto first = pool.acquire(1000);
  auto second = pool.acquire(1000);
  EXPECT_NE(first.get(), second.get());
  EXPECT_EQ(pool.reserved_bytes(), 2000u);
}

TEST(BufferPool, TheSmallestFreeBufferThatFitsIsChosen) {
  BufferPool pool;
  auto large = pool.acquire(4000);
  auto small = pool.acquire(1000);
  const Buffer* small_address = small.get();
  large.reset();
  small.reset();
  EXPECT_EQ(pool.acquire(800).get(), small_address);
}

TEST(BufferPool, AHeldBackBufferWaitsUntilEnoughBytesAreHandedOut) {
  BufferPool pool;
  auto held = pool.acquire(1000);
  const Buffer* held_address = held.get();
  pool.hold_back(*held, 2500);  // Free again once 1000 + 2500 bytes have been handed out.
  held.reset();
  auto other = pool.acquire(1000);  // 2000 handed out.
  const Buffer* other_address = other.get();
  EXPECT_NE(other_address, held_address);
  other.reset();
  EXPECT_EQ(pool.acquire(1000).get(), other_address);  // 3000: still held.
  EXPECT_EQ(pool.acquire(1000).get(), held_address);   // 4000: free, and first in the pool.
  EXPECT_EQ(pool.reserved_bytes(), 2000u);
}

TEST(BufferPool, HoldingBackABufferOfAnotherPoolChangesNothing) {
  BufferPool pool, other_pool;
  auto foreign = other_pool.acquire(1000);
  const Buffer* mine = pool.acquire(1000).get();
  pool.hold_back(*foreign, 1 << 20);
  EXPECT_EQ(pool.acquire(1000).get(), mine);
}

// Where a run's buffers lay (read while they were handed out).
struct Seen {
  std::byte* data = nullptr;
  std::size_t size = 0;
};

// One run: a and b live together, c starts after a came back (the chain a -> b -> c).
std::vector<Seen> run_chain(BufferPool& pool, std::size_t c_bytes = 1000) {
  pool.begin_run();
  std::vector<Seen> seen;
  auto a = pool.acquire(1000);
  auto b = pool.acquire(1000);
  seen.push_back({a->data(), a->size()});
  seen.push_back({b->data(), b->size()});
  a.reset();
  auto c = pool.acquire(c_bytes);
  seen.push_back({c->data(), c->size()});
  b.reset();
  c.reset();
  pool.end_run();
  return seen;
}

TEST(BufferPlanInPool, ARepeatedRunFollowsThePlanOfTheOneBefore) {
  BufferPool pool;
  run_chain(pool);
  EXPECT_FALSE(pool.last_run_planned());
  const std::vector<Seen> second = run_chain(pool);
  EXPECT_TRUE(pool.last_run_planned());
  // c takes a's offset (their lifetimes do not overlap); b has its own.
  EXPECT_EQ(second[2].data, second[0].data);
  EXPECT_EQ(second[1].data, second[0].data + 1024);
  // One arena of two 1024-byte slots replaces the free list's buffers.
  EXPECT_EQ(pool.reserved_bytes(), 2048u);
  run_chain(pool);
  EXPECT_TRUE(pool.last_run_planned());
  EXPECT_EQ(pool.reserved_bytes(), 2048u);
}

TEST(BufferPlanInPool, ARunThatDiffersLeavesThePlanWhereItDiffers) {
  BufferPool pool;
  run_chain(pool);
  const std::vector<Seen> differing = run_chain(pool, 3000);
  EXPECT_FALSE(pool.last_run_planned());
  // a and b still came from the plan; c (3000 bytes, not 1000) from the free list, elsewhere.
  EXPECT_EQ(differing[1].data, differing[0].data + 1024);
  EXPECT_GE(differing[2].size, 3000u);
  EXPECT_TRUE(differing[2].data + 3000 <= differing[0].data ||
              differing[2].data >= differing[0].data + 2048);
  // The plan is made again from that run, and followed by the next one like it.
  run_chain(pool, 3000);
  EXPECT_TRUE(pool.last_run_planned());
}

TEST(BufferPlanInPool, ABufferHeldPastTheRunIsNeverPlanned) {
  BufferPool pool;
  std::shared_ptr<Buffer> kept;
  const auto run = [&] {
    pool.begin_run();
    auto temporary = pool.acquire(512);
    auto output = pool.acquire(256);
    std::memset(output->data(), 7, 256);
    temporary.reset();
    pool.end_run();
    return output;
  };
  kept = run();
  run();
  auto held = run();
  EXPECT_TRUE(pool.last_run_planned());
  // The outputs of earlier runs are untouched by later ones.
  for (std::size_t i = 0; i < 256; ++i) ASSERT_EQ(kept->data()[i], std::byte{7});
  EXPECT_NE(kept->data(), held->data());
}

TEST(BufferPlanInPool, OutsideARunNothingIsLoggedOrPlanned) {
  BufferPool pool;
  const Buffer* first = pool.acquire(1000).get();
  EXPECT_EQ(pool.acquire(1000).get(), first);
  EXPECT_FALSE(pool.last_run_planned());
  EXPECT_EQ(pool.reserved_bytes(), 1000u);
}

TEST(BufferPlanInPool, APoolMadeNotToPlanServesEveryRunFromItsFreeList) {
  BufferPool pool(/*plan_runs=*/false);
  const std::vector<Seen> first = run_chain(pool);
  const std::vector<Seen> second = run_chain(pool);
  EXPECT_FALSE(pool.last_run_planned());
  // The free list's buffers, the same each run: c reuses a's.
  EXPECT_EQ(second[0].data, first[0].data);
  EXPECT_EQ(second[2].data, second[0].data);
  EXPECT_EQ(pool.reserved_bytes(), 2000u);
}

// Pools whose runs never overlap (the layout choice's executors, timed in turn) take their
// plans' arenas from one SharedArena: the larger plan's bytes, not both plans'.
TEST(SharedArenaInPools, PoolsRunInTurnHoldTheLargerArenaNotBoth) {
  auto shared = std::make_shared<SharedArena>();
  BufferPool small(shared), large(shared);
  run_chain(small);
  run_chain(small);
  ASSERT_TRUE(small.last_run_planned());
  EXPECT_EQ(shared->bytes(), small.reserved_bytes());
  run_chain(large, 3000);
  const std::vector<Seen> large_run = run_chain(large, 3000);
  ASSERT_TRUE(large.last_run_planned());
  const std::vector<Seen> small_run = run_chain(small);
  ASSERT_TRUE(small.last_run_planned());
  EXPECT_GT(large.reserved_bytes(), small.reserved_bytes());
  EXPECT_EQ(shared->bytes(), large.reserved_bytes());
  // Both plans start at offset 0 of the same memory.
  auto lowest = [](const std::vector<Seen>& run) {
    std::byte* low = run.front().data;
    for (const Seen& seen : run) low = std::min(low, seen.data);
    return low;
  };
  EXPECT_EQ(lowest(small_run), lowest(large_run));
  for (const Seen& seen : small_run)
    EXPECT_LE(seen.data + seen.size, lowest(large_run) + shared->bytes());
}

TEST(SharedArenaInPools, AReleasedArenaComesBackAtTheNextRunOnThePlan) {
  auto shared = std::make_shared<SharedArena>();
  BufferPool pool(shared), other(shared);
  run_chain(pool);
  run_chain(pool);
  const std::size_t planned = pool.reserved_bytes();
  ASSERT_EQ(shared->bytes(), planned);
  pool.release_arena();
  EXPECT_EQ(shared->bytes(), 0u) << "no pool holds the memory";
  EXPECT_EQ(pool.reserved_bytes(), planned) << "the plan stays";
  run_chain(pool);
  EXPECT_TRUE(pool.last_run_planned());
  EXPECT_EQ(shared->bytes(), planned);
  // While another pool's plan holds it, the memory stays.
  run_chain(other);
  run_chain(other);
  pool.release_arena();
  EXPECT_EQ(shared->bytes(), planned);
}

TEST(SharedArenaInPools, APoolOfItsOwnGetsItsArenaBackAfterARelease) {
  BufferPool pool;
  run_chain(pool);
  const std::vector<Seen> before = run_chain(pool);
  pool.release_arena();
  const std::vector<Seen> after = run_chain(pool);
  EXPECT_TRUE(pool.last_run_planned());
  EXPECT_EQ(after[2].data, after[0].data) << "the plan's offsets";
  EXPECT_EQ(after[1].data, after[0].data + 1024);
  EXPECT_EQ(pool.reserved_bytes(), 2048u);
}

}  // namespace
}  // namespace cleave
