// What the kernel says about the load on this machine now (/proc/stat).
#pragma once

namespace cleave {

/// Runnable threads in the whole system now (the caller included): `procs_running` of
/// /proc/stat, or -1 where it cannot be read.
int procs_running();

/// Threads of this process now (entries of /proc/self/task), or -1 where it cannot be read.
int process_threads();

}  // namespace cleave
