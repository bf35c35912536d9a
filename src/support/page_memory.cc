// Large byte buffers that fault fewer pages: huge-page advice and untouched zero mappings.
#include "support/page_memory.h"

#include <fmt/core.h>
#include <sys/mman.h>

#include <cstdint>

#include "support/error.h"

namespace cleave {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

}  // namespace

void advise_huge_pages(void* data, std::size_t bytes) {
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (start + kHugePage - 1) / kHugePage * kHugePage;
  const std::uintptr_t last = (start + bytes) / kHugePage * kHugePage;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

std::shared_ptr<std::vector<std::byte>> huge_page_bytes(std::size_t bytes) {
  auto vector = std::make_shared<std::vector<std::byte>>();
  // reserve() allocates without touching; resize() then writes the zeros. On the virtual
  // machine measured (docs/results/heldout-speed.md) a 4 KiB fault cost about 40 us: a model's
  // 130 MiB of weights cost more than a second of faults in small pages.
  vector->reserve(bytes);
  advise_huge_pages(vector->data(), bytes);
  vector->resize(bytes);
  return vector;
}

ZeroMapping::ZeroMapping(std::size_t bytes) : length_(bytes == 0 ? 1 : bytes) {
  void* raw =
      ::mmap(nullptr, length_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw Error(fmt::format("cannot map {} bytes of zeros", bytes));
  data_ = static_cast<std::byte*>(raw);
}

ZeroMapping::~ZeroMapping() {
  ::munmap(data_, length_);
}

}  // namespace cleave
