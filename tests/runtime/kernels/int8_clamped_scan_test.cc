// The clamped-data int8 convolution's one pass over its data: the clamped copy and the list of
// the values above 127 (or of the pairs above 255), split on a team, are the one-thread copy and
// list.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "runtime/kernels/nn/clamped_scan.h"

namespace cleave::quantize_detail {
namespace {

using Entry = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>;

std::vector<Entry> joined(const ClampedScan& scan) {
  std::vector<Entry> entries;
  for (const std::vector<Excess>& list : scan.lists()) {
    for (const Excess& e : list)
      entries.emplace_back(e.n, e.c, e.at[0], e.at[1], e.at[2], e.amount);
  }
  return entries;
}

// About `above` of the bytes above 127, the rest 0 or below.
std::vector<uint8_t> relu_like(std::mt19937& rng, int64_t count, double above) {
  std::uniform_real_distribution<double> share(0, 1);
  std::uniform_int_distribution<int> low(1, 127), high(128, 255);
  std::vector<uint8_t> x(static_cast<std::size_t>(count));
  for (uint8_t& v : x) {
    const double s = share(rng);
    v = static_cast<uint8_t>(s < above ? high(rng) : s < 0.5 ? 0 : low(rng));
  }
  return x;
}

int64_t bytes_of(const ScannedData& d) {
  return d.batch * d.channels * d.in[0] * d.in[1] * d.in[2];
}

// The copy and the list written out from each value's indices, in memory order.
struct Expected {
  std::vector<uint8_t> copy;
  std::vector<Entry> list;
};

Expected expected(const ScannedData& d, const std::vector<uint8_t>& x) {
  Expected e;
  e.copy.resize(x.size());
  std::vector<std::pair<int64_t, Entry>> found;
  const int64_t plane = d.in[0] * d.in[1] * d.in[2];
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t c = 0; c < d.channels; ++c) {
      for (int64_t p = 0; p < plane; ++p) {
        const int64_t at =
            d.channels_last ? (n * plane + p) * d.channels + c : (n * d.channels + c) * plane + p;
        const uint8_t v = x[static_cast<std::size_t>(at)];
        e.copy[static_cast<std::size_t>(at)] = v > 127 ? 127 : v;
        if (v > 127) {
          found.emplace_back(at, Entry(static_cast<int32_t>(n), static_cast<int32_t>(c),
                                       static_cast<int32_t>(p / (d.in[1] * d.in[2])),
                                       static_cast<int32_t>(p / d.in[2] % d.in[1]),
                                       static_cast<int32_t>(p % d.in[2]), v - 127));
        }
      }
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [at, entry] : found) e.list.push_back(entry);
  return e;
}

// Odd sizes: runs (a position's 37 channels, or a channel's 61·59 plane) not a multiple of the
// team nor of a vector, 2 images. 260 KiB: run() splits the pass on its team of two.
std::vector<ScannedData> odd_shapes() {
  ScannedData plain{2, 37, {1, 61, 59}, false}, last = plain;
  last.channels_last = true;
  return {plain, last};
}

TEST(Int8ClampedScan, ATeamOfTwoCopiesAndListsTheOneThreadResult) {
  std::mt19937 rng(3);
  for (const ScannedData& d : odd_shapes()) {
    const std::vector<uint8_t> x = relu_like(rng, bytes_of(d), 0.05);
    const Expected want = expected(d, x);
    ASSERT_GT(want.list.size(), 100u);
    ASSERT_GE(bytes_of(d), ClampedScan::kScanOnTeam);
    ClampedScan one(d), two(d);
    std::vector<uint8_t> copy_one(x.size(), 1), copy_two(x.size(), 2);
    one.run(x.data(), copy_one.data(), 1);
    two.run(x.data(), copy_two.data(), 2);
    EXPECT_EQ(one.lists().size(), 1u);
    EXPECT_EQ(two.lists().size(), 2u) << "the pass ran on a team of two";
    EXPECT_EQ(copy_one, want.copy) << "channels last: " << d.channels_last;
    EXPECT_EQ(copy_two, want.copy) << "channels last: " << d.channels_last;
    EXPECT_EQ(joined(one), want.list) << "channels last: " << d.channels_last;
    EXPECT_EQ(joined(two), want.list) << "channels last: " << d.channels_last;
    EXPECT_TRUE(two.complete());
    EXPECT_EQ(two.count(), static_cast<int64_t>(want.list.size()));
  }
}

// Shares done out of order (the last member first), and more members than some have runs for:
// the lists still join in member order into the one-thread list.
TEST(Int8ClampedScan, SharesDoneInAnyOrderJoinInMemberOrder) {
  std::mt19937 rng(4);
  std::vector<ScannedData> shapes = odd_shapes();
  shapes.push_back({1, 40, {1, 1, 2}, true});  // 2 runs for 3 members: the last has none.
  for (const ScannedData& d : shapes) {
    const std::vector<uint8_t> x = relu_like(rng, bytes_of(d), 0.2);
    const Expected want = expected(d, x);
    for (int members : {2, 3}) {
      ClampedScan scan(d);
      std::vector<uint8_t> copy(x.size(), 0);
      scan.start(members);
      for (int member = members - 1; member >= 0; --member) {
        scan.share(x.data(), copy.data(), member, members);
      }
      EXPECT_EQ(scan.lists().size(), static_cast<std::size_t>(members));
      EXPECT_EQ(copy, want.copy) << members << " members";
      EXPECT_EQ(joined(scan), want.list) << members << " members";
    }
  }
}

// Past the limit a member stops listing but still copies; the scan says it is incomplete. At the
// limit exactly it is complete.
TEST(Int8ClampedScan, PastTheLimitTheCopyGoesOnAndTheListIsIncomplete) {
  std::mt19937 rng(5);
  for (const ScannedData& d : odd_shapes()) {
    const std::vector<uint8_t> x = relu_like(rng, bytes_of(d), 0.3);
    const Expected want = expected(d, x);
    const auto values = static_cast<int64_t>(want.list.size());
    for (int threads : {1, 2}) {
      ClampedScan few(d, values / 10), exact(d, values);
      std::vector<uint8_t> copy(x.size(), 0);
      few.run(x.data(), copy.data(), threads);
      EXPECT_FALSE(few.complete()) << threads << " threads";
      EXPECT_LT(few.count(), values) << threads << " threads";
      EXPECT_EQ(copy, want.copy) << threads << " threads";
      exact.run(x.data(), nullptr, threads);
      EXPECT_TRUE(exact.complete()) << threads << " threads";
      EXPECT_EQ(joined(exact), want.list) << threads << " threads";
    }
  }
}

// Paired, the copy and the list written out pair by pair: channel 2j keeps at most 255 minus
// channel 2j+1, which is copied as it is; what 2j loses is listed at 2j.
Expected expected_paired(const ScannedData& d, const std::vector<uint8_t>& x) {
  Expected e;
  e.copy = x;
  std::vector<std::pair<int64_t, Entry>> found;
  const int64_t plane = d.in[0] * d.in[1] * d.in[2];
  const auto offset = [&](int64_t n, int64_t c, int64_t p) {
    return static_cast<std::size_t>(d.channels_last ? (n * plane + p) * d.channels + c
                                                    : (n * d.channels + c) * plane + p);
  };
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t c = 0; c < d.channels; c += 2) {
      for (int64_t p = 0; p < plane; ++p) {
        const int a = x[offset(n, c, p)], b = x[offset(n, c + 1, p)];
        if (a + b <= 255) continue;
        e.copy[offset(n, c, p)] = static_cast<uint8_t>(255 - b);
        found.emplace_back(offset(n, c, p), Entry(static_cast<int32_t>(n), static_cast<int32_t>(c),
                                                  static_cast<int32_t>(p / (d.in[1] * d.in[2])),
                                                  static_cast<int32_t>(p / d.in[2] % d.in[1]),
                                                  static_cast<int32_t>(p % d.in[2]), a + b - 255));
      }
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [at, entry] : found) e.list.push_back(entry);
  return e;
}

// Paired channels (38 of them, plain and channels-last, 2 images, 268 KiB): on 1 thread, on a
// team of two and share by share in any order, the copy and the list are the pairs' own; what
// the clamp took off, added back to the copy, is the data, and no pair of the copy passes 255.
TEST(Int8ClampedScan, PairedChannelsLoseOnlyTheirSurplusOver255) {
  std::mt19937 rng(6);
  for (bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels last" : "plain");
    const ScannedData d{2, 38, {1, 61, 59}, channels_last};
    const std::vector<uint8_t> x = relu_like(rng, bytes_of(d), 0.3);
    const Expected want = expected_paired(d, x), unpaired = expected(d, x);
    ASSERT_GT(want.list.size(), 100u);
    ASSERT_LT(want.list.size(), unpaired.list.size() / 2) << "pairs over 255 are fewer";
    for (int threads : {1, 2}) {
      ClampedScan scan(d);
      scan.set_paired(true);
      ASSERT_TRUE(scan.paired());
      std::vector<uint8_t> copy(x.size(), 1);
      scan.run(x.data(), copy.data(), threads);
      EXPECT_EQ(scan.lists().size(), static_cast<std::size_t>(threads));
      EXPECT_EQ(copy, want.copy) << threads << " threads";
      EXPECT_EQ(joined(scan), want.list) << threads << " threads";
      std::vector<uint8_t> taken(x.size(), 9);
      scan.excess(x.data(), taken.data(), threads);
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(copy[i] + taken[i], x[i]) << "at " << i;
      }
    }
    ClampedScan scan(d);
    scan.set_paired(true);
    std::vector<uint8_t> copy(x.size(), 0);
    scan.start(3);
    for (int member = 2; member >= 0; --member) scan.share(x.data(), copy.data(), member, 3);
    EXPECT_EQ(copy, want.copy) << "3 members, last first";
    EXPECT_EQ(joined(scan), want.list) << "3 members, last first";
  }
  ClampedScan odd(odd_shapes()[0]);
  odd.set_paired(true);
  EXPECT_FALSE(odd.paired()) << "37 channels: the last has no partner to pair with";
}

// What the clamp takes off (oneDNN's dense pass's data), on 1 thread and on a team of two,
// clamped at 127 and paired, plain and channels-last (266-268 KiB: split on the team), against
// each value's own: x − min(x, 127), or channel 2j's surplus over 255 − x₂ⱼ₊₁ and 0 at 2j+1.
TEST(Int8ClampedScan, TheExcessOnATeamIsEachValuesOwn) {
  std::mt19937 rng(8);
  std::vector<ScannedData> shapes = odd_shapes();
  for (bool channels_last : {false, true}) shapes.push_back({2, 38, {1, 61, 59}, channels_last});
  for (const ScannedData& d : shapes) {
    ASSERT_GE(bytes_of(d), ClampedScan::kScanOnTeam);
    const std::vector<uint8_t> x = relu_like(rng, bytes_of(d), 0.3);
    ClampedScan scan(d);
    scan.set_paired(true);  // 38 channels pair, 37 do not.
    std::vector<uint8_t> want(x.size());
    const int64_t plane = d.in[0] * d.in[1] * d.in[2];
    for (std::size_t i = 0; i < x.size(); ++i) {
      const int64_t c = d.channels_last ? static_cast<int64_t>(i) % d.channels
                                        : static_cast<int64_t>(i) / plane % d.channels;
      const std::size_t partner = d.channels_last ? i + 1 : i + static_cast<std::size_t>(plane);
      want[i] = !scan.paired() ? static_cast<uint8_t>(std::max(0, x[i] - 127))
                : c % 2 == 1   ? 0
                               : static_cast<uint8_t>(std::max(0, x[i] + x[partner] - 255));
    }
    for (int threads : {1, 2}) {
      std::vector<uint8_t> taken(x.size(), 9);
      scan.excess(x.data(), taken.data(), threads);
      EXPECT_EQ(taken, want) << threads << " threads, " << d.channels << " channels, "
                             << (d.channels_last ? "channels last" : "plain");
    }
  }
}

// The lists are fresh for the data the pass last read, once.
TEST(Int8ClampedScan, TheListsAreTakenOnceForTheDataTheyCameFrom) {
  const ScannedData d{1, 8, {1, 1, 4}, true};
  std::vector<uint8_t> x(32, 200), other(32, 0);
  ClampedScan scan(d);
  EXPECT_FALSE(scan.take_fresh(x.data())) << "nothing listed yet";
  scan.run(x.data(), nullptr, 1);
  EXPECT_FALSE(scan.take_fresh(other.data()));
  scan.run(x.data(), nullptr, 1);
  EXPECT_TRUE(scan.take_fresh(x.data()));
  EXPECT_FALSE(scan.take_fresh(x.data())) << "taken already";
  EXPECT_EQ(scan.count(), 32);
}

}  // namespace
}  // namespace cleave::quantize_detail
