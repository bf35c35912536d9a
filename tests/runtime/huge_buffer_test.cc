// Buffers of a huge page or more are mapped on their own, 2 MiB aligned and zeroed; smaller ones
// stay 64-byte aligned heap memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/tensor.h"

namespace cleave {
namespace {

bool all_zero(const Buffer& buffer) {
  const std::byte* data = buffer.data();
  return std::all_of(data, data + buffer.size(), [](std::byte b) { return b == std::byte{0}; });
}

TEST(HugeBuffer, ALargeBufferIsZeroedWritableAndAlignedToAHugePage) {
  const std::size_t bytes = (std::size_t{5} << 20) + 100;  // whole huge pages and a tail
  Buffer buffer(bytes);
  ASSERT_EQ(buffer.size(), bytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % (std::size_t{2} << 20), 0u);
  EXPECT_TRUE(all_zero(buffer));
  std::memset(buffer.data(), 0x7f, bytes);
  EXPECT_EQ(buffer.data()[bytes - 1], std::byte{0x7f});
}

TEST(HugeBuffer, ASmallBufferIsZeroedAndAlignedTo64Bytes) {
  Buffer buffer(1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 64, 0u);
  EXPECT_TRUE(all_zero(buffer));
}

}  // namespace
}  // namespace cleave
