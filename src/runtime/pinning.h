// Thread pinning and the core facts it needs: which CPUs this process may use, each core's cache.
#pragma once

#include <cstddef>
#include <vector>

namespace cleave {

/// The CPUs this process may run on (its affinity mask), in ascending order; empty when the
/// mask cannot be read.
std::vector<int> allowed_cpus();

/// The CPUs of this host a thread may be bound to (hwloc's topology: online, and allowed by the
/// cgroup), whatever this process's affinity mask; in ascending order; empty when unknown.
std::vector<int> online_cpus();

/// Binds the calling thread to `cpus` (best effort: where binding is forbidden, as in some
/// containers, the thread stays unpinned and runs correctly).
void pin_current_thread(const std::vector<int>& cpus);

/// Binds the calling thread to `cpus` while in scope and gives it back the CPUs it had on entry
/// (best effort, as pin_current_thread). Empty `cpus`: changes nothing.
class ThreadPinScope {
 public:
  explicit ThreadPinScope(const std::vector<int>& cpus);
  ~ThreadPinScope();
  ThreadPinScope(const ThreadPinScope&) = delete;
  ThreadPinScope& operator=(const ThreadPinScope&) = delete;

 private:
  std::vector<int> saved_;  ///< The CPUs on entry; empty: nothing to give back.
};

/// Most bytes core_cache_bytes() reports: no private cache of level 1 or 2 is larger.
inline constexpr std::size_t kMaxCoreCacheBytes = std::size_t{8} << 20;

/// The largest cache of level 1 or 2 private to one core (L2 on most x86 parts), at most
/// kMaxCoreCacheBytes; 1 MiB when hwloc cannot tell.
std::size_t core_cache_bytes();

}  // namespace cleave
