// The activation buffer pool: best-fit reuse, and buffers held back after another core read them.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cleave
