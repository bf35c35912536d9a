// Times an empty 2-thread OpenMP region after serial gaps of several lengths (the fork and join
// every multi-thread kernel pays), and a serial loop beside an idle, a spinning and a computing
// second thread (whether the two CPUs share a core). docs/results/heldout-speed.md, 2026-11-29.
//
// Build and run (GOMP_SPINCOUNT as cleave sets it: 300000 on a quiet host, 0 on a busy one):
//   g++ -O2 -std=c++20 -fopenmp bench/omp_region.cc -o /tmp/omp_region
//   GOMP_SPINCOUNT=300000 /tmp/omp_region && GOMP_SPINCOUNT=0 /tmp/omp_region
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
volatile double sink;

// About `n` dependent multiply-adds on each of two chains.
double serial_work(int n) {
  double a = 1.0, d = 1.0;
  for (int i = 0; i < n; ++i) {
    a = a * 1.0000001 + 1e-9;
    d = d * 0.9999999 + 1e-9;
  }
  return a + d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void serial_beside(const std::string& other) {
  std::atomic<bool> stop{false};
  std::thread helper;
  if (other != "idle") {
    helper = std::thread([&stop, fma = other == "fma"] {
      double x = 1;
      while (!stop.load(std::memory_order_relaxed)) {
        if (fma)
          x += serial_work(1000);
        else
          __builtin_ia32_pause();
      }
      sink = x;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<double> times;
  for (int r = 0; r < 200; ++r) {
    const Clock::time_point start = Clock::now();
    sink = serial_work(20000);
    times.push_back(micros_since(start));
  }
  stop = true;
  if (helper.joinable()) helper.join();
  std::printf("serial loop, other CPU %-5s: median %.1f us\n", other.c_str(), median(times));
}

}  // namespace

int main() {
  for (const char* other : {"idle", "spin", "fma"}) serial_beside(other);
  for (int gap : {0, 1000, 5000, 20000, 100000}) {
    std::vector<double> times;
    for (int r = 0; r < 400; ++r) {
      sink = serial_work(gap);
      const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(2)
      { sink = omp_get_thread_num(); }
      times.push_back(micros_since(start));
    }
    std::printf("gap of %6d iterations: empty 2-thread region median %.2f us\n", gap,
                median(times));
  }
  return 0;
}
