// The clamped copy of the data and the list of its values above 127, one pass on the team.
#include "runtime/kernels/nn/clamped_scan.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <vector>

#include "runtime/cpu_isa.h"

namespace cleave::quantize_detail {

namespace {

constexpr uint8_t kClamp = 127;

// Copies `count` bytes clamped (no `to`: none) and calls found(offset, excess) for each value
// above the clamp, 8 bytes at a time (most words have none).
template <typename Found>
void clamp_run(const uint8_t* x, uint8_t* to, int64_t count, Found&& found) {
  constexpr uint64_t kHighBits = 0x8080808080808080ull;
  if (to) {
    for (int64_t i = 0; i < count; ++i) to[i] = std::min(x[i], kClamp);
  }
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, x + i, sizeof word);
    if ((word & kHighBits) == 0) continue;
    for (int64_t k = i; k < i + 8; ++k) {
      if (x[k] > kClamp) found(k, x[k] - kClamp);
    }
  }
  for (; i < count; ++i) {
    if (x[i] > kClamp) found(i, x[i] - kClamp);
  }
}

// The same with AVX2, 32 bytes a step: the copy's vpminub and the high bits' vpmovmskb read one
// load, so the data is read once.
template <typename Found>
__attribute__((target("avx2"))) void clamp_run_avx2(const uint8_t* x, uint8_t* to, int64_t count,
                                                    Found&& found) {
  const __m256i clamp = _mm256_set1_epi8(static_cast<char>(kClamp));
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    if (to) _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), _mm256_min_epu8(v, clamp));
    for (auto high = static_cast<uint32_t>(_mm256_movemask_epi8(v)); high != 0; high &= high - 1) {
      const int64_t k = i + __builtin_ctz(high);
      found(k, x[k] - kClamp);
    }
  }
  for (; i < count; ++i) {
    if (to) to[i] = std::min(x[i], kClamp);
    if (x[i] > kClamp) found(i, x[i] - kClamp);
  }
}

}  // namespace

ClampedScan::ClampedScan(const ScannedData& data, int64_t limit) : d_(data), limit_(limit) {}

void ClampedScan::start(int members) {
  if (lists_.size() < static_cast<std::size_t>(members)) {
    lists_.resize(static_cast<std::size_t>(members));
  }
  for (std::vector<Excess>& list : lists_) list.clear();
  members_ = static_cast<std::size_t>(members);
  fresh_ = nullptr;
}

void ClampedScan::run(const uint8_t* from, uint8_t* to, int threads) {
  const int64_t bytes = d_.batch * d_.channels * d_.in[0] * d_.in[1] * d_.in[2];
  const int team = bytes < kScanOnTeam ? 1 : std::max(1, threads);
  start(team);
  if (team == 1) {
    share(from, to, 0, 1);
  } else {
    // A list that cannot grow (bad_alloc) is rethrown here: exceptions must not leave a thread.
    std::vector<std::exception_ptr> failures(static_cast<std::size_t>(team));
#pragma omp parallel num_threads(team)
    {
      // The team may be smaller than asked (nested regions): the shares are the members'.
      const int members = omp_get_num_threads(), member = omp_get_thread_num();
      if (member == 0) members_ = static_cast<std::size_t>(members);
      try {
        share(from, to, member, members);
      } catch (...) {
        failures[static_cast<std::size_t>(member)] = std::current_exception();
      }
    }
    for (std::exception_ptr& failure : failures) {
      if (failure) std::rethrow_exception(failure);
    }
  }
  fresh_ = from;
}

void ClampedScan::share(const uint8_t* from, uint8_t* to, int member, int members) {
  const int64_t plane = d_.in[0] * d_.in[1] * d_.in[2];
  const int64_t runs = d_.batch * (d_.channels_last ? plane : d_.channels);
  const int64_t length = d_.channels_last ? d_.channels : plane;
  const int64_t per = (runs + members - 1) / members;
  const int64_t first = std::min(runs, member * per), last = std::min(runs, first + per);
  std::vector<Excess>& list = lists_[static_cast<std::size_t>(member)];
  const auto limit_passed = [&] {
    return limit_ >= 0 && static_cast<int64_t>(list.size()) > limit_;
  };
  const bool avx2 = vector_isa() != VectorIsa::kBaseline;
  // Spatial index per dim of position p.
  const auto at = [&](int64_t p) -> std::array<int32_t, 3> {
    const int64_t row = p / d_.in[2];
    return {static_cast<int32_t>(row / d_.in[1]), static_cast<int32_t>(row % d_.in[1]),
            static_cast<int32_t>(p % d_.in[2])};
  };
  for (int64_t r = first; r < last; ++r) {
    const uint8_t* x = from + r * length;
    uint8_t* copy = to ? to + r * length : nullptr;
    if (limit_passed()) {  // Listing stopped: only the copy.
      if (copy) {
        for (int64_t i = 0; i < length; ++i) copy[i] = std::min(x[i], kClamp);
      }
      continue;
    }
    const auto n = static_cast<int32_t>(d_.channels_last ? r / plane : r / d_.channels);
    if (d_.channels_last) {
      const std::array<int32_t, 3> where = at(r % plane);
      const auto found = [&](int64_t c, int amount) {
        list.push_back({n, static_cast<int32_t>(c), where, amount});
      };
      if (avx2) {
        clamp_run_avx2(x, copy, length, found);
      } else {
        clamp_run(x, copy, length, found);
      }
    } else {
      const auto c = static_cast<int32_t>(r % d_.channels);
      const auto found = [&](int64_t p, int amount) { list.push_back({n, c, at(p), amount}); };
      if (avx2) {
        clamp_run_avx2(x, copy, length, found);
      } else {
        clamp_run(x, copy, length, found);
      }
    }
  }
}

bool ClampedScan::take_fresh(const uint8_t* from) {
  const bool fresh = fresh_ != nullptr && fresh_ == from;
  fresh_ = nullptr;
  return fresh;
}

bool ClampedScan::complete() const {
  return limit_ < 0 || count() <= limit_;
}

int64_t ClampedScan::count() const {
  int64_t total = 0;
  for (const std::vector<Excess>& list : lists()) total += static_cast<int64_t>(list.size());
  return total;
}

}  // namespace cleave::quantize_detail
