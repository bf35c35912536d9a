// Buffer pool: reuse by liveness (a buffer returns when its last tensor lets go), best fit; and
// a static buffer plan (runtime/buffer_plan.h) followed while runs repeat the logged one.
#include "runtime/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/buffer_plan.h"

namespace cleave {

namespace {

constexpr std::size_t kUnlogged = std::numeric_limits<std::size_t>::max();

// One entry of a run's log: a buffer handed out (its bytes), or one coming back (the index of
// its hand-out in the run). A hand-out for a value shaped at run time repeats one whatever its
// bytes: other data is not another run.
struct Event {
  bool release = false;
  std::size_t value = 0;
  bool run_time = false;
  bool operator==(const Event& other) const {
    if (release != other.release || run_time != other.run_time) return false;
    return (run_time && !release) || value == other.value;
  }
};

// A static plan's memory: one allocation (its own, or a SharedArena's that may be larger), and
// per hand-out of the logged run its slice (null for a buffer the plan leaves to the free list).
struct Arena {
  std::size_t bytes = 0;                    // What the plan needs.
  std::vector<std::size_t> offsets, sizes;  // Per hand-out; kUnlogged: none.
  std::unique_ptr<Buffer> memory;           // Its own; null on a SharedArena or once released.
  std::byte* data = nullptr;                // Where its slices lie; null once released.
  uint64_t generation = 0;                  // The SharedArena's memory it lies in.
  std::vector<std::unique_ptr<Buffer>> slots;

  // The same plan on the memory at `to`.
  std::shared_ptr<Arena> on(std::byte* to) const {
    auto arena = std::make_shared<Arena>();
    arena->bytes = bytes;
    arena->offsets = offsets;
    arena->sizes = sizes;
    arena->data = to;
    arena->slots.resize(offsets.size());
    for (std::size_t k = 0; k < offsets.size(); ++k) {
      if (offsets[k] != kUnlogged && to)
        arena->slots[k] = Buffer::borrowed(to + offsets[k], sizes[k]);
    }
    return arena;
  }
};

// The buffers of values shaped at run time (acquire_run_time), kept across runs.
struct RunTimeBuffers {
  std::vector<std::unique_ptr<Buffer>> buffers;        // null: freed, its index vacant
  std::vector<uint64_t> last_run;                      // per buffer: the run that last took it
  std::set<std::pair<std::size_t, std::size_t>> free;  // (size, index)
  std::vector<std::size_t> vacant;
  std::size_t held = 0;
  int64_t made = 0;
  int64_t reused = 0;

  void drop(std::size_t index) {
    held -= buffers[index]->size();
    buffers[index].reset();
    vacant.push_back(index);
  }

  // After a run, what it did not take goes: the pool holds what one run needed, not what
  // every size that ever came asked for.
  void trim(uint64_t run) {
    for (auto it = free.begin(); it != free.end();) {
      if (last_run[it->second] == run) {
        ++it;
        continue;
      }
      drop(it->second);
      it = free.erase(it);
    }
  }
};

}  // namespace

// Free buffers are kept sorted by (size, index) and returned by the last tensor's deleter, so
// acquire() costs a logarithm of the pool's size: scanning every buffer for one no tensor
// held made a run quadratic in the number of live values (a 200,000-node random DAG: 72 s).
struct BufferPool::State {
  std::mutex mutex;
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<std::size_t> free_after;  // per buffer: reusable once handed_out reaches this
  std::set<std::pair<std::size_t, std::size_t>> free;  // (size, index)
  std::unordered_map<const Buffer*, std::size_t> index_of;
  std::size_t reserved = 0;
  std::size_t handed_out = 0;  // bytes acquire() has returned, reused or new

  // The static plan.
  bool plan_runs = true;
  bool in_run = false;
  uint64_t run = 0;             // the current (or last) run's number
  std::vector<Event> log;       // this run's
  std::size_t acquired = 0;     // hand-outs in this run
  std::vector<Event> plan_log;  // the run the plan was made from
  std::shared_ptr<Arena> arena;
  std::shared_ptr<SharedArena> shared;  // Where the arena's memory comes from; null: its own.
  bool following = false;               // every event of this run so far repeated plan_log
  std::size_t cursor = 0;               // the next event of plan_log to repeat
  bool last_run_planned = false;

  RunTimeBuffers run_time;

  void note(const Event& event) {
    log.push_back(event);
    if (!following) return;
    if (cursor < plan_log.size() && plan_log[cursor] == event) {
      ++cursor;
    } else {
      following = false;  // Later buffers come from the free list.
    }
  }

  void released(uint64_t of_run, std::size_t hand_out) {
    if (in_run && of_run == run && hand_out != kUnlogged) note({true, hand_out});
  }

  // Plans the logged run: a buffer that came back within it gets an offset from its lifetime
  // (positions in the log); the arena replaces the free list's buffers.
  void make_plan() {
    plan_log = std::move(log);
    log.clear();
    arena.reset();
    // A plan's shared memory is sized for the plans held now: this pool's old one no longer is.
    if (shared) shared->let_go(this);
    if (acquired > kMaxPlannedBuffers) return;
    std::vector<BufferRequest> requests;
    std::vector<std::size_t> position_of(acquired, 0);
    std::vector<std::size_t> request_of(acquired, kUnlogged);
    std::size_t hand_out = 0;
    for (std::size_t position = 0; position < plan_log.size(); ++position) {
      const Event& event = plan_log[position];
      if (!event.release) {
        position_of[hand_out++] = position;
        continue;
      }
      request_of[event.value] = requests.size();
      requests.push_back({plan_log[position_of[event.value]].value, 0,
                          static_cast<int>(position_of[event.value]), static_cast<int>(position)});
    }
    if (requests.empty()) return;
    const BufferLayout layout = plan_buffers(requests);
    // The free list's buffers are what the arena now serves: they go before it is made, so the
    // logged run's buffers and the arena are never resident at once.
    for (const auto& [size, index] : free) {
      reserved -= size;
      index_of.erase(buffers[index].get());
      buffers[index].reset();
    }
    free.clear();
    Arena planned;
    planned.bytes = layout.arena_bytes;
    planned.offsets.assign(acquired, kUnlogged);
    planned.sizes.assign(acquired, 0);
    for (std::size_t k = 0; k < acquired; ++k) {
      if (request_of[k] == kUnlogged) continue;
      planned.offsets[k] = layout.offsets[request_of[k]];
      planned.sizes[k] = requests[request_of[k]].bytes;
    }
    arena = std::make_shared<Arena>(std::move(planned));
    bind_arena();
  }

  // Before a planned run, and when a plan is made: the arena's memory, taken again where it
  // was released or the shared memory was made again for another pool's plan.
  void bind_arena() {
    if (!arena || (arena->data && !shared)) return;
    if (!shared) {
      auto memory = std::make_unique<Buffer>(arena->bytes);
      std::byte* data = memory->data();
      arena = arena->on(data);
      arena->memory = std::move(memory);
      return;
    }
    uint64_t generation = 0;
    std::byte* data = shared->take(this, arena->bytes, generation);
    if (data != arena->data || generation != arena->generation) {
      arena = arena->on(data);
      arena->generation = generation;
    }
  }

  ~State() {
    if (shared) shared->let_go(this);
  }
};

std::size_t SharedArena::bytes() const {
  std::lock_guard lock(mutex_);
  return memory_ ? memory_->size() : 0;
}

std::byte* SharedArena::take(const void* user, std::size_t bytes, uint64_t& generation) {
  std::lock_guard lock(mutex_);
  plans_[user] = bytes;
  std::size_t largest = 0;
  for (const auto& [pool, plan] : plans_) largest = std::max(largest, plan);
  if (!memory_ || memory_->size() != largest) {
    // The other pools lie in the old memory only between their runs: they take the new one at
    // their next (their generation differs), so the old goes first.
    memory_.reset();
    memory_ = std::make_unique<Buffer>(largest);
    ++generation_;
  }
  generation = generation_;
  return memory_->data();
}

void SharedArena::let_go(const void* user) {
  std::lock_guard lock(mutex_);
  plans_.erase(user);
  if (plans_.empty()) memory_.reset();
}

BufferPool::BufferPool(bool plan_runs) : state_(std::make_shared<State>()) {
  state_->plan_runs = plan_runs;
}

BufferPool::BufferPool(std::shared_ptr<SharedArena> shared) : BufferPool(true) {
  state_->shared = std::move(shared);
}

void BufferPool::release_arena() {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  if (!s.arena || !s.arena->data) return;
  s.arena = s.arena->on(nullptr);
  if (s.shared) s.shared->let_go(&s);
}

std::shared_ptr<Buffer> BufferPool::acquire(std::size_t bytes) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  std::size_t hand_out = kUnlogged;
  if (s.in_run) {
    hand_out = s.acquired++;
    s.note({false, bytes});
    if (s.following && hand_out < s.arena->slots.size() && s.arena->slots[hand_out]) {
      // The arena stays alive while any of its slices is handed out.
      return std::shared_ptr<Buffer>(
          s.arena->slots[hand_out].get(),
          [state = state_, arena = s.arena, run = s.run, hand_out](Buffer*) {
            std::lock_guard lock(state->mutex);
            state->released(run, hand_out);
          });
    }
  }
  s.handed_out += bytes;
  std::size_t index = s.buffers.size();
  for (auto it = s.free.lower_bound({bytes, 0}); it != s.free.end(); ++it) {
    if (s.free_after[it->second] <= s.handed_out) {
      index = it->second;
      s.free.erase(it);
      break;
    }
  }
  if (index == s.buffers.size()) {
    s.buffers.push_back(std::make_unique<Buffer>(bytes));
    s.free_after.push_back(0);
    s.index_of[s.buffers.back().get()] = index;
    s.reserved += bytes;
  }
  Buffer* buffer = s.buffers[index].get();
  // The deleter holds the state, so a tensor that outlives the pool keeps its memory.
  return std::shared_ptr<Buffer>(buffer,
                                 [state = state_, index, run = s.run, hand_out](Buffer* released) {
                                   std::lock_guard lock(state->mutex);
                                   state->free.insert({released->size(), index});
                                   state->released(run, hand_out);
                                 });
}

std::shared_ptr<Buffer> BufferPool::acquire_run_time(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  if (!s.in_run) {
    // Outside begin_run() and end_run() there is no plan to keep apart from, nor a run's end to
    // trim at: the free list serves (it reuses by liveness across runs too).
    lock.unlock();
    return acquire(size);
  }
  // Logged as a hand-out of its class, so that a plan made from this run gives it a slot of
  // that size; a later run's value that fits takes the slot, a larger one a kept buffer.
  const std::size_t hand_out = s.acquired++;
  s.note({false, size, true});
  RunTimeBuffers& r = s.run_time;
  if (s.following && hand_out < s.arena->slots.size() && s.arena->slots[hand_out] &&
      s.arena->slots[hand_out]->size() >= bytes) {
    ++r.reused;
    return std::shared_ptr<Buffer>(
        s.arena->slots[hand_out].get(),
        [state = state_, arena = s.arena, run = s.run, hand_out](Buffer*) {
          std::lock_guard lock(state->mutex);
          state->released(run, hand_out);
        });
  }
  std::size_t index = 0;
  const auto fit = r.free.lower_bound({size, 0});
  if (fit != r.free.end() && fit->first / 2 < size) {
    index = fit->second;
    r.free.erase(fit);
    ++r.reused;
  } else {
    // Zeroed all the same: made once and then reused, the fill is not paid per run.
    auto buffer = std::make_unique<Buffer>(size);
    if (r.vacant.empty()) {
      index = r.buffers.size();
      r.buffers.push_back(std::move(buffer));
      r.last_run.push_back(0);
    } else {
      index = r.vacant.back();
      r.vacant.pop_back();
      r.buffers[index] = std::move(buffer);
    }
    r.held += size;
    ++r.made;
  }
  Buffer* buffer = r.buffers[index].get();
  r.last_run[index] = s.run;
  return std::shared_ptr<Buffer>(buffer,
                                 [state = state_, index, run = s.run, hand_out](Buffer* released) {
                                   std::lock_guard lock(state->mutex);
                                   state->run_time.free.insert({released->size(), index});
                                   state->released(run, hand_out);
                                 });
}

std::size_t BufferPool::size_class(std::size_t bytes) {
  constexpr std::size_t kSmallest = 64;
  if (bytes <= kSmallest) return kSmallest;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) return bytes;
  // 2^top < bytes <= 2^(top + 1): steps of a quarter of 2^top waste under a quarter.
  const int top = std::bit_width(bytes - 1) - 1;
  const std::size_t step = std::size_t{1} << (top - 2);
  return (bytes + step - 1) / step * step;
}

BufferPool::RunTimeStats BufferPool::run_time_stats() const {
  std::lock_guard lock(state_->mutex);
  const RunTimeBuffers& r = state_->run_time;
  return {r.made, r.reused, r.held};
}

void BufferPool::hold_back(const Buffer& buffer, std::size_t bytes) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  const auto it = s.index_of.find(&buffer);
  if (it != s.index_of.end()) s.free_after[it->second] = s.handed_out + bytes;
}

std::size_t BufferPool::reserved_bytes() const {
  std::lock_guard lock(state_->mutex);
  return state_->reserved + state_->run_time.held + (state_->arena ? state_->arena->bytes : 0);
}

void BufferPool::begin_run() {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  if (!s.plan_runs) return;
  // A run that never ended (it threw) may have left slices of the arena in use.
  if (s.in_run) {
    s.arena.reset();
    if (s.shared) s.shared->let_go(&s);
  }
  s.bind_arena();
  s.in_run = true;
  ++s.run;
  s.log.clear();
  s.acquired = 0;
  s.cursor = 0;
  s.following = s.arena != nullptr;
}

void BufferPool::end_run() {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  if (!s.plan_runs) return;
  s.in_run = false;
  s.last_run_planned = s.following && s.cursor == s.plan_log.size();
  if (!s.last_run_planned) s.make_plan();
  s.run_time.trim(s.run);
}

bool BufferPool::last_run_planned() const {
  std::lock_guard lock(state_->mutex);
  return state_->last_run_planned;
}

}  // namespace cleave
