// Platform-independent uniform, integer and normal draws on top of mt19937_64.
#include "modelgen/random.h"

#include <cmath>
#include <numbers>
#include <utility>

namespace cleave {

double DeterministicRandom::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

uint64_t DeterministicRandom::uniform_index(uint64_t bound) {
  // Reject the top partial block of the 64-bit range so every residue is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t bits = engine_();
  while (bits >= limit) bits = engine_();
  return bits % bound;
}

double DeterministicRandom::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_normal_ = radius * std::sin(angle);
  has_spare_normal_ = true;
  return radius * std::cos(angle);
}

std::vector<int> DeterministicRandom::sample_distinct(std::vector<int> pool, std::size_t count) {
  std::vector<int> chosen;
  for (std::size_t i = 0; i < count && !pool.empty(); ++i) {
    std::size_t pick = uniform_index(pool.size());
    chosen.push_back(pool[pick]);
    std::swap(pool[pick], pool.back());
    pool.pop_back();
  }
  return chosen;
}

}  // namespace cleave
