// Buffer pool: reuse by liveness (a buffer returns when its last tensor lets go), best fit.
#include "runtime/buffer_pool.h"

#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cleave {

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
};

BufferPool::BufferPool() : state_(std::make_shared<State>()) {}

std::shared_ptr<Buffer> BufferPool::acquire(std::size_t bytes) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
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
  return std::shared_ptr<Buffer>(buffer, [state = state_, index](Buffer* released) {
    std::lock_guard lock(state->mutex);
    state->free.insert({released->size(), index});
  });
}

void BufferPool::hold_back(const Buffer& buffer, std::size_t bytes) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  const auto it = s.index_of.find(&buffer);
  if (it != s.index_of.end()) s.free_after[it->second] = s.handed_out + bytes;
}

std::size_t BufferPool::reserved_bytes() const {
  std::lock_guard lock(state_->mutex);
  return state_->reserved;
}

}  // namespace cleave
