// What this process holds in memory, as the reports of runs give it.
#pragma once

#include <cstddef>

namespace cleave {

/// The process's resident-memory high-water mark so far, in bytes.
std::size_t peak_rss_bytes();

}  // namespace cleave
