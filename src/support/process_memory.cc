// What this process holds in memory, as the reports of runs give it.
#include "support/process_memory.h"

#include <sys/resource.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cleave {

std::size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB.
}

void return_large_frees_to_the_system() {
#if defined(__GLIBC__)
  // Setting it also stops glibc from moving it (its "dynamic mmap threshold").
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

}  // namespace cleave
