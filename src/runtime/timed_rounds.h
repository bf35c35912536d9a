// Executors timed against each other in interleaved rounds, each with no other's threads alive.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/executor_interface.h"

namespace cleave {

/// How time_in_rounds alternates the executors.
struct TimedRounds {
  int warmup = 0;          ///< Untimed rounds over every executor first (one run each).
  int rounds = 1;          ///< Timed rounds over every executor, the order reversed every other.
  int runs_per_round = 1;  ///< Timed runs of the executor in each round, after the untimed ones.
  /// Every round on the caller's thread, no executor's threads ended: for executors that only
  /// the thread that initialized MPI may drive (MPI ranks, MPI_THREAD_FUNNELED).
  bool on_caller_thread = false;
  /// Untimed runs of the executor at the start of each timed round. Two, because the second run
  /// on a round's fresh thread is not yet at the steady pace of a model run again and again:
  /// squeezenet1_0 at 2 threads took 7.0-8.1 ms in it against 5.5-6.1 in the runs after it.
  int untimed_runs_per_round = 2;
};

/// One run of executor `index` as the caller times it: its milliseconds.
using RoundRun = std::function<double(std::size_t index)>;

/// Times `executors` against each other: `rounds.warmup` untimed rounds, then `rounds.rounds`
/// rounds, each executor in turn (A B C, then C B A, ...) making `rounds.untimed_runs_per_round`
/// untimed runs, then `rounds.runs_per_round` timed ones. `run(v)` makes executor v's run (on the
/// round's thread) and returns its milliseconds; the result holds per executor the timed runs in
/// order.
///
/// Each executor's round runs on a thread of its own, joined after it, and then the executor's
/// threads are ended (ParallelExecutor::end_threads); before the first round every executor's
/// threads and the caller's own OpenMP team are ended. So while one executor is timed, no other
/// executor's workers or OpenMP teams are alive: libgomp spins only briefly between parallel
/// regions while it manages more threads than there are cores, and every run would pay the
/// extra wake-ups. The untimed runs of a round start the threads again and refill the caches
/// the other rounds used. An error of a run is thrown here, after its round ended. With
/// `rounds.on_caller_thread` the rounds alternate alike, on the caller's thread.
std::vector<std::vector<double>> time_in_rounds(const std::vector<ExecutorInterface*>& executors,
                                                const TimedRounds& rounds, const RoundRun& run);

}  // namespace cleave
