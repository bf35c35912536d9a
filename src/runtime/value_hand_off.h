// Hand-off of values between workers: a producer publishes a task's outputs, readers await them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

/// How a value crosses from the worker that computes it to the workers that read it. The
/// thread executor hands over references in this process (InProcessHandOff); an MPI transport
/// would send the tensors on publish() and receive them in await().
///
/// A run is numbered; a value is the outputs of one task of one run. publish() and await()
/// are called from worker threads, concurrently for different tasks; begin_run() and stop()
/// from any thread.
class ValueHandOff {
 public:
  enum class Wait {
    kReady,     ///< The outputs are there.
    kStopped,   ///< stop() was called: the run failed elsewhere.
    kTimedOut,  ///< Nothing came within the timeout.
  };

  virtual ~ValueHandOff() = default;
  /// Before run `run` starts, while no worker runs: clears a stop of an earlier run.
  virtual void begin_run(int64_t run) = 0;
  /// After `task` ran in run `run`, on its worker: `outputs` (which stay where they are until
  /// every reader is done) are ready for readers.
  virtual void publish(int task, int64_t run, const std::vector<Tensor>& outputs) = 0;
  /// On a reader's worker: waits until `task`'s outputs of run `run` are published (at most
  /// `timeout_seconds` once it starts sleeping), then points `*outputs` at them.
  virtual Wait await(int task, int64_t run, double timeout_seconds,
                     const std::vector<Tensor>** outputs) = 0;
  /// Wakes every waiter; await() answers kStopped until the next begin_run().
  virtual void stop() = 0;
  /// On a worker that was not given the run's graph inputs (an MPI rank other than 0): waits
  /// for graph input `value` of `sample` as await() does. In one process every worker has them,
  /// so nothing is ever handed over: kStopped.
  virtual Wait await_input(ValueId value, int sample, int64_t run, double timeout_seconds,
                           const Tensor** tensor);
};

/// Hand-off between threads of one process: the producer's outputs are read in place; a ready
/// flag per task (the run number it holds) is spun on briefly, then slept on.
class InProcessHandOff : public ValueHandOff {
 public:
  explicit InProcessHandOff(int tasks);
  void begin_run(int64_t run) override;
  void publish(int task, int64_t run, const std::vector<Tensor>& outputs) override;
  Wait await(int task, int64_t run, double timeout_seconds,
             const std::vector<Tensor>** outputs) override;
  void stop() override;

 private:
  // One cache line per task, so a producer marking one task ready does not disturb a worker
  // spinning on another's flag.
  struct alignas(64) Slot {
    std::atomic<int64_t> ready{0};  // Run number whose outputs are published.
    std::atomic<int> sleepers{0};   // Workers asleep until this task is ready.
    const std::vector<Tensor>* outputs = nullptr;
  };
  std::unique_ptr<Slot[]> slots_;
  std::atomic<bool> stopped_{false};
  std::mutex mutex_;
  std::condition_variable changed_;  // A task is ready, or the run stopped.
};

}  // namespace cleave
