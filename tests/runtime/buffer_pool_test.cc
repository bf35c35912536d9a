// The activation buffer pool: best-fit reuse, and buffers held back after another core read them.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cleave
