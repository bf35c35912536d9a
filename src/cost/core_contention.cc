// Seeing cores held by other work: runnable threads in /proc/stat, and a team's loop timed.
#include "cost/core_contention.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/cpu_quota.h"
#include "support/system_load.h"
#include "support/timing.h"

namespace cleave {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A dependent chain of multiply-adds: compute only, no memory traffic, so the team's threads
// do not slow each other down; the volatile read keeps the compiler from folding it.
[[gnu::noinline]] double spin(long iterations) {
  volatile double one = 1.0;
  double value = 0.0;
  for (long i = 0; i < iterations; ++i) value = value * 0.999999 + one;
  return value;
}

// About 50 µs on a 3 GHz core: long enough to time, short enough to try often.
constexpr long kIterations = 30000;

// Threads of this process ready to run (state R in /proc/self/task/*/stat): the caller, and an
// OpenMP team that still spins after its last region.
int own_running_threads() {
  int running = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (name) S ...": the name may hold spaces and parentheses; the state follows the last.
    const std::size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') {
      ++running;
    }
  }
  return running;
}

}  // namespace

int other_runnable_threads() {
  std::vector<double> samples;
  for (int sample = 0; sample < 5; ++sample) {
    if (sample > 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
    const int running = procs_running();
    if (running < 0) return -1;
    samples.push_back(std::max(0, running - std::max(1, own_running_threads())));
  }
  return static_cast<int>(median_of(samples));
}

double parallel_slowdown(int threads, int samples) {
  if (threads <= 1) return 1.0;
  [[maybe_unused]] volatile double sink = 0;
  // The team's first region may create its threads; that is not what is measured.
#pragma omp parallel num_threads(threads)
  { sink = spin(100); }
  std::vector<double> ratios;
  for (int sample = 0; sample < std::max(1, samples); ++sample) {
    double start = seconds_now();
    sink = spin(kIterations);
    double alone = seconds_now() - start;
    start = seconds_now();
#pragma omp parallel num_threads(threads)
    { sink = spin(kIterations); }
    double together = seconds_now() - start;
    ratios.push_back(together / std::max(alone, 1e-9));
  }
  return median_of(ratios);
}

bool cores_free(int threads) {
  if (threads <= 1) return true;
  const int others = other_runnable_threads();
  if (others > usable_cores() - threads) return false;
  return parallel_slowdown(threads) < 1.5;
}

}  // namespace cleave
