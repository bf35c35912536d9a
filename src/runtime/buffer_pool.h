// Activation buffers by liveness: best fit among free buffers, held back after a remote read, or
// offsets in one arena from a static buffer plan once runs repeat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/tensor.h"

namespace cleave {

/// The memory of the static plans' arenas of pools whose runs never overlap (executors run in
/// turn on one thread, as the layout choice's are): one allocation as large as the largest plan
/// of the pools that hold it, instead of an arena per pool. When that size changes, the old
/// memory goes before the new is made, and each pool takes the new at its next run.
class SharedArena {
 public:
  /// Bytes of the memory now: 0 while no pool holds it.
  std::size_t bytes() const;

 private:
  friend class BufferPool;
  // Pool `user` holds the memory for a plan of `bytes`: the memory, resized where it no longer
  // fits the largest plan held; `generation` changes whenever it is made again.
  std::byte* take(const void* user, std::size_t bytes, uint64_t& generation);
  // Pool `user` lets go; the memory goes with the last pool.
  void let_go(const void* user);

  mutable std::mutex mutex_;
  std::unique_ptr<Buffer> memory_;
  std::map<const void*, std::size_t> plans_;  // Per pool holding it, its plan's bytes.
  uint64_t generation_ = 0;
};

/// Hands out activation buffers and takes them back when no tensor uses them any more, so a
/// run needs only as much memory as its live values (best fit among free buffers: the smallest
/// that fits, the oldest of equal sizes). A handed-out buffer stays valid after the pool is
/// gone.
///
/// Between begin_run() and end_run() the pool also logs what it hands out and when each
/// buffer comes back. Once a run's log is known, the next run follows a static buffer plan
/// made from it (runtime/buffer_plan.h: offsets from the lifetimes, in one arena) for as long
/// as it repeats that log exactly, as a run over static shapes does; a buffer still held when
/// the run ended (an output) is never planned. The first difference ends the plan for the
/// rest of that run (later buffers come from the free list), and the plan is made again from
/// the log of the run that differed.
class BufferPool {
 public:
  /// `plan_runs` false: never a static plan, only the free list. For a pool several executors
  /// share, one after another, whose runs each log differently (a plan would be made again
  /// after every run).
  explicit BufferPool(bool plan_runs = true);
  /// Static plans take their arena from `shared` (SharedArena), whose other pools never run
  /// while this one does.
  explicit BufferPool(std::shared_ptr<SharedArena> shared);
  std::shared_ptr<Buffer> acquire(std::size_t bytes);
  /// A buffer for a value whose shape is known only at run time (run_time_nodes): its size
  /// changes with the data, so the run's log records it as a hand-out of a size class (a
  /// quarter of a power of two) that any size repeats, and a static plan holds across runs of
  /// other data. A plan made from a run gives it a slot of that class in the arena (it shares
  /// the memory of the values dead by then); a later value that does not fit its slot, or one
  /// the plan has none for, comes from buffers kept across runs: the smallest free one of at
  /// least `bytes` (and under twice its class). A run ends by freeing those it did not hand
  /// out, so the pool keeps what one run took, whatever sizes earlier runs asked for. Outside
  /// a run (a pool whose user never calls begin_run(), or one made with `plan_runs` false)
  /// they come from the free list, rounded to the class.
  std::shared_ptr<Buffer> acquire_run_time(std::size_t bytes);
  /// Keeps `buffer` from being handed out again until the pool has handed out `bytes` more
  /// (ignored when the buffer is not this pool's). For a buffer another core has read:
  /// rewriting it while that core's cache still holds its lines costs several times a plain
  /// write.
  void hold_back(const Buffer& buffer, std::size_t bytes);
  /// Bytes held by the pool: the activation memory a run needed at its peak (the arena of a
  /// static plan included).
  std::size_t reserved_bytes() const;

  /// Lets go of the static plan's arena memory between runs; the plan stays, and its next run
  /// takes the memory again (zeros, or a SharedArena's). Call between runs only.
  void release_arena();

  /// The run whose buffers the pool logs starts. For a pool only one thread uses.
  void begin_run();
  /// The run ends: with a log that differed from the plan's, the plan is made again.
  void end_run();
  /// Whether the last run followed a static plan to its end.
  bool last_run_planned() const;

  /// What acquire_run_time() did over the pool's life.
  struct RunTimeStats {
    int64_t made = 0;    ///< Buffers allocated for them.
    int64_t reused = 0;  ///< Hand-outs without an allocation: a slot of the plan, a kept buffer.
    std::size_t held_bytes = 0;  ///< Bytes of the kept buffers now, in use or free.
  };
  RunTimeStats run_time_stats() const;
  /// The size class acquire_run_time() rounds `bytes` up to.
  static std::size_t size_class(std::size_t bytes);
  /// Most buffers a run may log and still be planned (planning is quadratic in them).
  static constexpr std::size_t kMaxPlannedBuffers = 4096;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace cleave
