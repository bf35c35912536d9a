// Thread pinning through hwloc, with one topology loaded per process.
#include "runtime/pinning.h"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>

namespace cleave {

namespace {

hwloc_topology_t shared_topology() {
  static hwloc_topology_t topology = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0)
      return hwloc_topology_t{nullptr};
    return t;
  }();
  return topology;
}

}  // namespace

std::size_t core_cache_bytes() {
  constexpr std::size_t kFallback = std::size_t{1} << 20;
  hwloc_topology_t topology = shared_topology();
  if (!topology) return kFallback;
  hwloc_obj_t core = hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, 0);
  std::size_t largest = 0;
  for (hwloc_obj_t cache = core ? core->parent : nullptr; cache; cache = cache->parent) {
    if (!hwloc_obj_type_is_cache(cache->type)) continue;
    if (hwloc_get_nbobjs_inside_cpuset_by_type(topology, cache->cpuset, HWLOC_OBJ_CORE) > 1) break;
    // Only the first two levels: a hypervisor may present the host's shared L3 as private to
    // each vCPU (the 2-core EPYC VMs here report a 508 MiB "L3" per core), and holding back
    // that much made the thread executor allocate, and page-fault, fresh buffers every run.
    if (cache->attr->cache.depth > 2) break;
    largest = std::max<std::size_t>(largest, cache->attr->cache.size);
  }
  return largest > 0 ? std::min(largest, kMaxCoreCacheBytes) : kFallback;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

std::vector<int> online_cpus() {
  std::vector<int> cpus;
  hwloc_topology_t topology = shared_topology();
  if (!topology) return cpus;
  hwloc_const_cpuset_t set = hwloc_topology_get_topology_cpuset(topology);
  for (int cpu = hwloc_bitmap_first(set); cpu >= 0; cpu = hwloc_bitmap_next(set, cpu))
    cpus.push_back(cpu);
  return cpus;
}

void pin_current_thread(const std::vector<int>& cpus) {
  hwloc_topology_t topology = shared_topology();
  if (!topology || cpus.empty()) return;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int cpu : cpus) hwloc_bitmap_set(set, static_cast<unsigned>(cpu));
  // Best effort: a container may forbid binding; the run is still correct unpinned.
  hwloc_set_cpubind(topology, set, HWLOC_CPUBIND_THREAD);
  hwloc_bitmap_free(set);
}

namespace {

// The calling thread's CPUs (sched_getaffinity of thread 0 is the caller's), or empty.
std::vector<int> current_thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

void set_current_thread_cpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // Best effort, as pin_current_thread.
}

}  // namespace

ThreadPinScope::ThreadPinScope(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  saved_ = current_thread_cpus();
  if (saved_.empty() || saved_ == cpus) {
    saved_.clear();
    return;
  }
  set_current_thread_cpus(cpus);
}

ThreadPinScope::~ThreadPinScope() {
  if (!saved_.empty()) set_current_thread_cpus(saved_);
}

}  // namespace cleave
