// What a parallel plan pays when a worker rewrites a buffer that a worker on another core read:
// core 0 copies into a buffer each round; in the "read remotely" rounds core 1 then reads it,
// in the others nobody else touches it. Prints the median time of core 0's write and of core
// 1's read in both cases, alternating the two cases block by block so that host noise hits both.
//
// Build and run:
//   g++ -O2 -std=c++20 -pthread bench/parallel/cross_core_write.cc -o /tmp/cross_core_write
//   /tmp/cross_core_write [KIB=294] [BLOCKS=10]
// (294 KiB: one Concat output of the generated inception_x8 model, 96 channels of 28x28, which
// its lc plan reads on the other worker.)
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    std::fprintf(stderr, "cannot pin a thread to CPU %d (two CPUs are needed)\n", cpu);
    std::exit(1);
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t bytes = (argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 294) * 1024;
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 10;
  if (bytes == 0 || blocks < 1) {
    std::fprintf(stderr, "usage: %s [KIB > 0] [BLOCKS > 0]\n", argv[0]);
    return 2;
  }
  constexpr int kRoundsPerBlock = 50;
  std::vector<char> buffer(bytes), source(bytes, 1), remote_copy(bytes);
  // Per case (0: nobody else reads, 1: core 1 reads after each write).
  std::vector<double> write_seconds[2], read_seconds[2];
  // 0: core 0's turn; 1: core 1 should read (or not); 2: core 1 is done; -1: stop.
  std::atomic<int> turn{0};
  std::atomic<int> remote_reads{0};
  std::thread reader([&] {
    pin_to(1);
    for (;;) {
      int now;
      while ((now = turn.load(std::memory_order_acquire)) != 1) {
        if (now < 0) return;
      }
      if (remote_reads.load(std::memory_order_relaxed)) {
        double start = seconds_now();
        std::memcpy(remote_copy.data(), buffer.data(), bytes);
        read_seconds[1].push_back(seconds_now() - start);
      }
      turn.store(2, std::memory_order_release);
    }
  });
  pin_to(0);
  for (int block = 0; block < 2 * blocks; ++block) {
    int read_remotely = block % 2;
    remote_reads.store(read_remotely, std::memory_order_relaxed);
    for (int round = 0; round < kRoundsPerBlock; ++round) {
      double start = seconds_now();
      std::memcpy(buffer.data(), source.data(), bytes);
      if (round > 0) write_seconds[read_remotely].push_back(seconds_now() - start);
      turn.store(1, std::memory_order_release);
      while (turn.load(std::memory_order_acquire) != 2) {
      }
      turn.store(0, std::memory_order_release);
    }
  }
  turn.store(-1, std::memory_order_release);
  reader.join();
  double alone = median(write_seconds[0]) * 1e6, shared = median(write_seconds[1]) * 1e6;
  std::printf("%zu KiB, %d blocks of %d rounds per case\n", bytes / 1024, blocks, kRoundsPerBlock);
  std::printf("core 0 rewrites it, nobody else read it:   median %.1f us\n", alone);
  std::printf("core 0 rewrites it after core 1 read it:   median %.1f us (%.2fx)\n", shared,
              shared / alone);
  std::printf("core 1 reads what core 0 wrote:            median %.1f us\n",
              median(read_seconds[1]) * 1e6);
  return 0;
}
