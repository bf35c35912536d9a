// Seeded random numbers: reproducible transforms on top of the standard mt19937_64 bits.
#include "modelgen/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace cleave {
namespace {

TEST(DeterministicRandom, UniformIsTheTop53BitsOfTheEngine) {
  // mt19937_64's first output for the default seed 5489 is fixed by the C++ standard.
  DeterministicRandom random(5489);
  EXPECT_EQ(random.uniform(), static_cast<double>(14514284786278117030ULL >> 11) * 0x1.0p-53);
}

TEST(DeterministicRandom, SameSeedGivesTheSameNormals) {
  DeterministicRandom a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.normal(), b.normal());
}

TEST(DeterministicRandom, NormalsHaveUnitVariance) {
  DeterministicRandom random(7);
  double sum = 0, squares = 0;
  const int count = 20000;
  for (int i = 0; i < count; ++i) {
    double x = random.normal();
    sum += x;
    squares += x * x;
  }
  EXPECT_NEAR(sum / count, 0.0, 0.05);
  EXPECT_NEAR(squares / count, 1.0, 0.05);
}

TEST(DeterministicRandom, UniformIndexStaysBelowTheBoundAndHitsEveryValue) {
  DeterministicRandom random(3);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint64_t x = random.uniform_index(7);
    ASSERT_LT(x, 7u);
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST(DeterministicRandom, SampleDistinctNeverRepeats) {
  DeterministicRandom random(5);
  std::vector<int> drawn = random.sample_distinct({1, 2, 3, 4, 5, 6}, 4);
  ASSERT_EQ(drawn.size(), 4u);
  EXPECT_EQ(std::set<int>(drawn.begin(), drawn.end()).size(), 4u);
}

}  // namespace
}  // namespace cleave
