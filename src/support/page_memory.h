// Large byte buffers that fault fewer pages: huge-page advice and untouched zero mappings.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace cleave {

/// Advises the whole 2 MiB pages inside [data, data + bytes) as transparent huge pages (THP
/// "madvise" mode), before their first touch; advice only: where refused, pages stay small.
void advise_huge_pages(void* data, std::size_t bytes);

/// `bytes` zero bytes whose whole 2 MiB pages were advised as transparent huge pages before
/// their first touch, so that filling them faults once per 2 MiB instead of once per 4 KiB.
/// Without transparent huge pages (or below 2 MiB) it is a plain zeroed vector.
std::shared_ptr<std::vector<std::byte>> huge_page_bytes(std::size_t bytes);

/// Read-only zero bytes that are never made resident: every page reads as the kernel's shared
/// zero page. For stand-in inputs whose contents nobody reads.
class ZeroMapping {
 public:
  explicit ZeroMapping(std::size_t bytes);
  ~ZeroMapping();
  ZeroMapping(const ZeroMapping&) = delete;
  ZeroMapping& operator=(const ZeroMapping&) = delete;

  /// The first byte; valid while this object lives.
  const std::byte* data() const { return data_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace cleave
