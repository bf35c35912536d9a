// Does an idle OpenMP team of another thread turn the main thread's team from spinning to
// sleeping between parallel regions? libgomp spins only gomp_throttled_spin_count_var pauses
// while it manages more threads than there are CPUs (config/linux/wait.h, do_spin). Mode 0: the
// main thread's team of 2 alone; mode 1: beside another thread that made a team of 2 and waits.
// Build: g++ -O2 -fopenmp -std=c++20 omp_throttle.cc -o omp_throttle; count the futex calls with
// `strace -f -c -e trace=futex ./omp_throttle 0` (and 1).
#include <omp.h>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
static volatile double sink;
int main(int argc, char** argv) {
  const int mode = atoi(argv[1]);
  const int threads = 2;
  std::mutex m;
  std::condition_variable cv;
  bool made = false, quit = false;
  std::thread other;
  if (mode == 1) {
    other = std::thread([&] {
#pragma omp parallel num_threads(threads)
      { sink = omp_get_thread_num(); }
      std::unique_lock l(m);
      made = true;
      cv.notify_all();
      cv.wait(l, [&] { return quit; });
    });
    std::unique_lock l(m);
    cv.wait(l, [&] { return made; });
  }
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 20000; ++r) {
#pragma omp parallel num_threads(threads)
    {
      double s = 0;
      for (int i = 0; i < 2000; ++i) s += i * 0.5;
      sink = s;
    }
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      20000;
  std::printf("mode %d: %.2f us per region\n", mode, us);
  if (mode == 1) {
    {
      std::lock_guard l(m);
      quit = true;
    }
    cv.notify_all();
    other.join();
  }
}
