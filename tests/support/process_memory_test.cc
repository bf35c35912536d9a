// Large frees go back to the system once return_large_frees_to_the_system has run.
#include "support/process_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cleave {
namespace {

#if defined(__GLIBC__)
// Allocations through a volatile pointer, so that the compiler keeps them.
void* (*volatile allocate)(std::size_t) = std::malloc;
void (*volatile release)(void*) = std::free;

TEST(ReturnLargeFrees, ABlockFreedAfterALargerOneIsStillItsOwnMapping) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's malloc, whose threshold this sets";
#endif
  return_large_frees_to_the_system();
  // glibc would raise its threshold to this block's size when it is freed (a loaded weight
  // let go after packing), and serve the next smaller blocks from the heap, kept resident.
  void* large = allocate(24u << 20);
  std::memset(large, 1, 24u << 20);
  release(large);
  const std::size_t mapped_before = mallinfo2().hblkhd;
  void* block = allocate(1u << 20);
  std::memset(block, 1, 1u << 20);
  EXPECT_GE(mallinfo2().hblkhd, mapped_before + (1u << 20));
  release(block);
}
#endif

}  // namespace
}  // namespace cleave
