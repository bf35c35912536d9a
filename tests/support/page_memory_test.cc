// Huge-page-advised byte vectors and untouched zero mappings.
#include "support/page_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "support/process_memory.h"

namespace cleave {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Large blocks as cleave's main() makes them: mappings of their own. With glibc's moving
// threshold, the second large block came from the heap, whose free top then served the
// ReturnLargeFrees test's block.
class HugePageBytes : public ::testing::Test {
 protected:
  void SetUp() override { return_large_frees_to_the_system(); }
};

// The VmFlags line of the mapping in /proc/self/smaps that holds `address`; empty if none.
std::string vm_flags_at(std::uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= address && address < to;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST_F(HugePageBytes, HoldsTheGivenNumberOfZeros) {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{100}, 3 * kHugePage + 5}) {
    auto vector = huge_page_bytes(bytes);
    ASSERT_EQ(vector->size(), bytes);
    EXPECT_TRUE(
        std::all_of(vector->begin(), vector->end(), [](std::byte b) { return b == std::byte{0}; }));
  }
}

TEST_F(HugePageBytes, AdvisesTheWholeHugePagesInside) {
  auto vector = huge_page_bytes(3 * kHugePage);
  const auto start = reinterpret_cast<std::uintptr_t>(vector->data());
  const std::uintptr_t inside = (start + kHugePage - 1) / kHugePage * kHugePage;
  const std::string flags = vm_flags_at(inside);
  ASSERT_FALSE(flags.empty()) << "no mapping in /proc/self/smaps holds the bytes";
  // "hg": MADV_HUGEPAGE was given for this range.
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST(ZeroMapping, ReadsAsZerosAndIsNotWritable) {
  ZeroMapping zeros(3 * kHugePage);
  for (std::size_t at = 0; at < 3 * kHugePage; at += 4096)
    EXPECT_EQ(zeros.data()[at], std::byte{0});
  const std::string flags = vm_flags_at(reinterpret_cast<std::uintptr_t>(zeros.data()));
  ASSERT_FALSE(flags.empty());
  EXPECT_NE(flags.find(" rd"), std::string::npos) << flags;
  EXPECT_EQ(flags.find(" wr"), std::string::npos) << flags;
}

}  // namespace
}  // namespace cleave
