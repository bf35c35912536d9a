// Whether other work holds the cores an intra-op run would use (timings taken then run slow).
#pragma once

namespace cleave {

/// Threads of other processes ready to run on this machine: the median of a few samples of
/// /proc/stat's procs_running less this process's running threads. -1 when that cannot be
/// read.
int other_runnable_threads();

/// How many times longer `threads` OpenMP threads take to run a short fixed loop each, all at
/// once, than one thread takes to run it alone: the median of `samples` tries. About 1 on a
/// quiet host; far above when the hypervisor has taken one of this machine's cores away, since
/// a thread of the team then waits milliseconds for the core to come back. (Threads of other
/// processes on this machine show here only at times: the scheduler lets a thread that has
/// just woken run first. other_runnable_threads sees those.) Returns 1 for one thread.
double parallel_slowdown(int threads, int samples = 5);

/// Whether a team of `threads` threads would have its cores to itself now: no more other
/// runnable threads than the cores this process may use leave over, and a parallel_slowdown
/// below 1.5. Always true for one thread.
bool cores_free(int threads);

}  // namespace cleave
