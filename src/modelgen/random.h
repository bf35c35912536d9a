// Seeded random numbers that are identical on every platform and standard library.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace cleave {

/// std::mt19937_64 is specified bit for bit, but the standard distributions are not; these
/// transforms are written out so a seed gives the same model everywhere.
class DeterministicRandom {
 public:
  explicit DeterministicRandom(uint64_t seed) : engine_(seed) {}

  uint64_t next_bits() { return engine_(); }
  /// Uniform in [0, 1), 53 random bits.
  double uniform();
  /// Uniform integer in [0, bound); bound must be positive. Unbiased (rejection sampling).
  uint64_t uniform_index(uint64_t bound);
  /// True with probability `probability`.
  bool bernoulli(double probability) { return uniform() < probability; }
  /// Standard normal by the Box-Muller transform.
  double normal();
  /// `count` distinct values of `pool`, chosen uniformly, in the order drawn.
  std::vector<int> sample_distinct(std::vector<int> pool, std::size_t count);

 private:
  std::mt19937_64 engine_;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

}  // namespace cleave
