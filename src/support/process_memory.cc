// What this process holds in memory, as the reports of runs give it.
#include "support/process_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cleave {

std::size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB.
}

double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  const std::string key = "MemAvailable:";
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size())) * 1024;  // in kB
  }
  return 0;
}

void return_large_frees_to_the_system() {
#if defined(__GLIBC__)
  // Setting it also stops glibc from moving it (its "dynamic mmap threshold").
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

}  // namespace cleave
