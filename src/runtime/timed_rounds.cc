// Interleaved timing rounds of executors, each alone: a thread of its own, no one else's threads.
#include "runtime/timed_rounds.h"

#include <omp.h>

#include <chrono>
#include <exception>
#include <thread>

#include "runtime/parallel_executor.h"
#include "support/system_load.h"

namespace cleave {

namespace {

// libgomp's team threads exit by themselves once their master's thread ended (they are
// detached), microseconds later; a thread the caller started meanwhile must not hold rounds up.
constexpr std::chrono::milliseconds kThreadsLeaveWithin{20};

void wait_for_threads(int at_most) {
  if (at_most < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + kThreadsLeaveWithin;
  while (process_threads() > at_most && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// Of the executors, only the thread executor keeps threads between runs: the sequential one
// runs on the caller's thread, and pipelined stages start their threads for each run.
void end_threads(ExecutorInterface& executor) {
  if (auto* parallel = dynamic_cast<ParallelExecutor*>(&executor)) parallel->end_threads();
}

// The OpenMP team a thread made ends with the thread, so `body` runs on one of its own; then
// the executor's workers end too, and the next round starts with the threads there were before.
void round_alone(ExecutorInterface& executor, const std::function<void()>& body) {
  const int before = process_threads();
  std::exception_ptr failure;
  std::thread round([&] {
    try {
      body();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  round.join();
  end_threads(executor);
  wait_for_threads(before);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

std::vector<std::vector<double>> time_in_rounds(const std::vector<ExecutorInterface*>& executors,
                                                const TimedRounds& rounds, const RoundRun& run) {
  // Workers started when their executors were made, and the caller's team from profiles and
  // output checks, would otherwise be alive during the first rounds.
  if (!rounds.on_caller_thread) {
    for (ExecutorInterface* executor : executors) end_threads(*executor);
    omp_pause_resource_all(omp_pause_hard);
  }
  std::vector<std::vector<double>> ms(executors.size());
  const auto round_of_each = [&](int round, bool timed) {
    for (std::size_t k = 0; k < executors.size(); ++k) {
      const std::size_t v = round % 2 == 0 ? k : executors.size() - 1 - k;
      const auto body = [&] {
        for (int i = 0; i < (timed ? rounds.untimed_runs_per_round : 1); ++i) run(v);
        for (int i = 0; timed && i < rounds.runs_per_round; ++i) ms[v].push_back(run(v));
      };
      if (rounds.on_caller_thread) {
        body();
      } else {
        round_alone(*executors[v], body);
      }
    }
  };
  for (int i = 0; i < rounds.warmup; ++i) round_of_each(i, false);
  for (int i = 0; i < rounds.rounds; ++i) round_of_each(i, true);
  return ms;
}

}  // namespace cleave
