// The clamped copy of the data and the list of its values above 127, one pass on the team.
#include "runtime/kernels/nn/clamped_scan.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "runtime/cpu_isa.h"

namespace cleave::quantize_detail {

namespace {

constexpr uint8_t kClamp = 127;

// Copies x[begin, end) clamped into `to` (null: no copy) and, while `listing`, calls
// found(offset, amount) for each value the clamp lowers; found returns whether to go on listing
// (the limit). Paired: offsets 2j and 2j+1 (begin and end even) a pair whose surplus above 255
// comes off 2j; else every value clamped at 127.
template <bool kPaired, typename Found>
void clamp_range(const uint8_t* x, uint8_t* to, int64_t begin, int64_t end, bool& listing,
                 Found&& found) {
  for (int64_t i = begin; i < end; i += kPaired ? 2 : 1) {
    const uint8_t kept = kPaired ? std::min<uint8_t>(x[i], static_cast<uint8_t>(255 - x[i + 1]))
                                 : std::min(x[i], kClamp);
    if (to) {
      to[i] = kept;
      if (kPaired) to[i + 1] = x[i + 1];
    }
    if (listing && kept != x[i]) listing = found(i, x[i] - kept);
  }
}

// The same with AVX2, 32 bytes a step, the data read once. Paired: each 16-bit lane a pair, the
// partner's 255 - x (its byte shifted down, complemented) the bound of channel 2j's byte and
// 0xFF the partner's own.
template <bool kPaired, typename Found>
__attribute__((target("avx2"))) void clamp_range_avx2(const uint8_t* x, uint8_t* to, int64_t begin,
                                                      int64_t end, bool& listing, Found&& found) {
  const __m256i clamp = _mm256_set1_epi8(static_cast<char>(kClamp));
  const __m256i ones = _mm256_set1_epi8(-1);
  int64_t i = begin;
  for (; i + 32 <= end; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    __m256i kept;
    uint32_t lowered;
    if constexpr (kPaired) {
      kept = _mm256_min_epu8(v, _mm256_xor_si256(_mm256_srli_epi16(v, 8), ones));
      lowered = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(kept, v)));
    } else {
      kept = _mm256_min_epu8(v, clamp);
      lowered = static_cast<uint32_t>(_mm256_movemask_epi8(v));
    }
    if (to) _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), kept);
    for (; listing && lowered != 0; lowered &= lowered - 1) {
      const int64_t k = i + __builtin_ctz(lowered);
      listing = found(k, kPaired ? x[k] + x[k + 1] - 255 : x[k] - kClamp);
    }
  }
  clamp_range<kPaired>(x, to, i, end, listing, found);
}

// Paired planes (plain data): channel 2j's plane `a` bounded by 255 minus channel 2j+1's `b`,
// which is copied as it is.
template <typename Found>
void clamp_planes(const uint8_t* a, const uint8_t* b, uint8_t* to_a, uint8_t* to_b, int64_t begin,
                  int64_t end, bool& listing, Found&& found) {
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t kept = std::min<uint8_t>(a[i], static_cast<uint8_t>(255 - b[i]));
    if (to_a) {
      to_a[i] = kept;
      to_b[i] = b[i];
    }
    if (listing && kept != a[i]) listing = found(i, a[i] - kept);
  }
}

template <typename Found>
__attribute__((target("avx2"))) void clamp_planes_avx2(const uint8_t* a, const uint8_t* b,
                                                       uint8_t* to_a, uint8_t* to_b, int64_t count,
                                                       bool& listing, Found&& found) {
  const __m256i ones = _mm256_set1_epi8(-1);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    const __m256i kept = _mm256_min_epu8(va, _mm256_xor_si256(vb, ones));
    if (to_a) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to_a + i), kept);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to_b + i), vb);
    }
    auto lowered = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(kept, va)));
    for (; listing && lowered != 0; lowered &= lowered - 1) {
      const int64_t k = i + __builtin_ctz(lowered);
      listing = found(k, a[k] + b[k] - 255);
    }
  }
  clamp_planes(a, b, to_a, to_b, i, count, listing, found);
}

// What the clamp at 127 takes off x[begin, end): max(x − 127, 0).
void excess_clamped(const uint8_t* x, uint8_t* to, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) to[i] = static_cast<uint8_t>(x[i] - std::min(x[i], kClamp));
}

__attribute__((target("avx2"))) void excess_clamped_avx2(const uint8_t* x, uint8_t* to,
                                                         int64_t begin, int64_t end) {
  const __m256i clamp = _mm256_set1_epi8(static_cast<char>(kClamp));
  int64_t i = begin;
  for (; i + 32 <= end; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), _mm256_subs_epu8(v, clamp));
  }
  excess_clamped(x, to, i, end);
}

// Channel 2j's surplus over 255 minus its partner 2j+1 (begin and end even); the partner's none.
uint8_t surplus(uint8_t x, uint8_t partner) {
  return static_cast<uint8_t>(x - std::min<uint8_t>(x, static_cast<uint8_t>(255 - partner)));
}

void excess_pairs(const uint8_t* x, uint8_t* to, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += 2) {
    to[i] = surplus(x[i], x[i + 1]);
    to[i + 1] = 0;
  }
}

// Each 16-bit lane a pair: x minus its paired clamp (clamp_range_avx2's), 0 in the partner's byte.
__attribute__((target("avx2"))) void excess_pairs_avx2(const uint8_t* x, uint8_t* to, int64_t begin,
                                                       int64_t end) {
  const __m256i ones = _mm256_set1_epi8(-1);
  int64_t i = begin;
  for (; i + 32 <= end; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i kept = _mm256_min_epu8(v, _mm256_xor_si256(_mm256_srli_epi16(v, 8), ones));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), _mm256_sub_epi8(v, kept));
  }
  excess_pairs(x, to, i, end);
}

// Paired planes: plane `a`'s surplus over 255 minus `b`, and `b`'s none.
void excess_planes(const uint8_t* a, const uint8_t* b, uint8_t* to_a, uint8_t* to_b, int64_t begin,
                   int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    to_a[i] = surplus(a[i], b[i]);
    to_b[i] = 0;
  }
}

__attribute__((target("avx2"))) void excess_planes_avx2(const uint8_t* a, const uint8_t* b,
                                                        uint8_t* to_a, uint8_t* to_b,
                                                        int64_t count) {
  const __m256i ones = _mm256_set1_epi8(-1);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    const __m256i kept = _mm256_min_epu8(va, _mm256_xor_si256(vb, ones));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to_a + i), _mm256_sub_epi8(va, kept));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to_b + i), _mm256_setzero_si256());
  }
  excess_planes(a, b, to_a, to_b, i, count);
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

void ClampedScan::set_paired(bool paired) {
  paired_ = paired && d_.channels % 2 == 0;
}

void ClampedScan::share(const uint8_t* from, uint8_t* to, int member, int members) {
  const int64_t plane = d_.in[0] * d_.in[1] * d_.in[2];
  // Runs, each contiguous: a position's channels (channels-last), a channel's plane (plain), or
  // two channels' planes (plain, paired).
  const int64_t length = d_.channels_last ? d_.channels : paired_ ? 2 * plane : plane;
  const int64_t runs = d_.batch * d_.channels * plane / length;
  const int64_t per = (runs + members - 1) / members;
  const int64_t first = std::min(runs, member * per), last = std::min(runs, first + per);
  std::vector<Excess>& list = lists_[static_cast<std::size_t>(member)];
  const auto go_on = [&] { return limit_ < 0 || static_cast<int64_t>(list.size()) <= limit_; };
  bool listing = go_on();  // Past the limit: only the copy.
  const bool avx2 = vector_isa() != VectorIsa::kBaseline;
  // Spatial index per dim of position p.
  const auto at = [&](int64_t p) -> std::array<int32_t, 3> {
    const int64_t row = p / d_.in[2];
    return {static_cast<int32_t>(row / d_.in[1]), static_cast<int32_t>(row % d_.in[1]),
            static_cast<int32_t>(p % d_.in[2])};
  };
  if (d_.channels_last) {
    // The member's runs as one range (pairs start at even offsets: even channel counts), the
    // run and channel worked out only for the values found.
    const auto found = [&](int64_t offset, int amount) {
      const int64_t r = offset / d_.channels;
      list.push_back({static_cast<int32_t>(r / plane), static_cast<int32_t>(offset % d_.channels),
                      at(r % plane), amount});
      return go_on();
    };
    const int64_t begin = first * length, end = last * length;
    if (paired_ && avx2) {
      clamp_range_avx2<true>(from, to, begin, end, listing, found);
    } else if (paired_) {
      clamp_range<true>(from, to, begin, end, listing, found);
    } else if (avx2) {
      clamp_range_avx2<false>(from, to, begin, end, listing, found);
    } else {
      clamp_range<false>(from, to, begin, end, listing, found);
    }
    return;
  }
  for (int64_t r = first; r < last; ++r) {
    const uint8_t* x = from + r * length;
    uint8_t* copy = to ? to + r * length : nullptr;
    const int64_t pairs_or_channels = paired_ ? d_.channels / 2 : d_.channels;
    const auto n = static_cast<int32_t>(r / pairs_or_channels);
    const auto c = static_cast<int32_t>(r % pairs_or_channels * (paired_ ? 2 : 1));
    const auto found = [&](int64_t p, int amount) {
      list.push_back({n, c, at(p), amount});
      return go_on();
    };
    if (paired_ && avx2) {
      clamp_planes_avx2(x, x + plane, copy, copy ? copy + plane : nullptr, plane, listing, found);
    } else if (paired_) {
      clamp_planes(x, x + plane, copy, copy ? copy + plane : nullptr, 0, plane, listing, found);
    } else if (avx2) {
      clamp_range_avx2<false>(x, copy, 0, length, listing, found);
    } else {
      clamp_range<false>(x, copy, 0, length, listing, found);
    }
  }
}

void ClampedScan::excess(const uint8_t* from, uint8_t* to, int threads) const {
  const int64_t plane = d_.in[0] * d_.in[1] * d_.in[2];
  const int64_t bytes = d_.batch * d_.channels * plane;
  // Runs as the scan's: a pair of planes where the plain data is paired, else any even offset.
  const int64_t run = paired_ && !d_.channels_last ? 2 * plane : 2;
  const int64_t runs = (bytes + run - 1) / run;
  const bool avx2 = vector_isa() != VectorIsa::kBaseline;
  const auto part = [&](int64_t member, int64_t members) {
    const int64_t per = (runs + members - 1) / members;
    const int64_t begin = std::min(bytes, member * per * run);
    const int64_t end = std::min(bytes, begin + per * run);
    if (!paired_) {
      avx2 ? excess_clamped_avx2(from, to, begin, end) : excess_clamped(from, to, begin, end);
    } else if (d_.channels_last) {
      avx2 ? excess_pairs_avx2(from, to, begin, end) : excess_pairs(from, to, begin, end);
    } else {
      for (int64_t r = begin; r < end; r += 2 * plane) {
        avx2 ? excess_planes_avx2(from + r, from + r + plane, to + r, to + r + plane, plane)
             : excess_planes(from + r, from + r + plane, to + r, to + r + plane, 0, plane);
      }
    }
  };
  const int team = bytes < kScanOnTeam ? 1 : std::max(1, threads);
  if (team == 1) {
    part(0, 1);
    return;
  }
#pragma omp parallel num_threads(team)
  part(omp_get_thread_num(), omp_get_num_threads());
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
