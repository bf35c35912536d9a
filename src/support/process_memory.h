// What this process holds in memory, as the reports of runs give it.
#pragma once

#include <cstddef>

namespace cleave {

/// The process's resident-memory high-water mark so far, in bytes.
std::size_t peak_rss_bytes();

/// The memory this host can give processes now without swapping (MemAvailable of
/// /proc/meminfo), in bytes; 0 where it cannot be read.
double available_memory_bytes();

/// Makes every later allocation of 128 KiB or more a mapping of its own, given back to the
/// system when freed. By default glibc raises that threshold as large blocks are freed, and
/// the loaded weights freed once kernels packed them then stay resident inside the heap
/// (retinanet_resnet50_fpn: about 100 MiB). Call it before a model loads.
void return_large_frees_to_the_system();

}  // namespace cleave
