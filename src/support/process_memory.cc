// What this process holds in memory, as the reports of runs give it.
#include "support/process_memory.h"

#include <sys/resource.h>

namespace cleave {

std::size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB.
}

}  // namespace cleave
