// The clamped-data int8 convolution's one pass over its data on the node's team: the copy
// clamped at 127 and the values above it found together (clamped_data.h).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/intra_op_team.h"

namespace cleave::quantize_detail {

/// One data value above the clamp: where it lies (batch, channel, spatial index per dim), and by
/// how much it exceeds (at most 128 clamped at 127, 255 paired).
struct Excess {
  int32_t n, c;
  std::array<int32_t, 3> at;
  int32_t amount;
};

/// Where dense u8 data (plain or channels-last, no padding) lies.
struct ScannedData {
  int64_t batch = 1, channels = 1;
  std::array<int64_t, 3> in{1, 1, 1};  ///< Spatial sizes, 1 past the data's.
  bool channels_last = false;
};

/// Copies dense u8 data clamped so that oneDNN's int16 pair sums cannot saturate, and lists what
/// the clamp took off, in one pass split on a team: each member its runs (one position's channels
/// channels-last, one channel's plane plain, or a pair of planes paired) and its own list, so the
/// lists taken in member order are the one-thread list whatever the team. Values are clamped at
/// 127; or, paired (set_paired), where oneDNN multiplies channels 2j and 2j+1 into one int16 pair
/// sum, a pair whose values add up to more than 255 loses the surplus from channel 2j (a pair of
/// at most 255 in all sums to at most 255·128 in magnitude, whatever the weights), which leaves
/// far fewer values to list from data after a ReLU. Shared by the clamped pass (which copies) and
/// the excess sums (which read the lists); one run of the node at a time.
class ClampedScan {
 public:
  /// `limit`: past this many values (-1: no limit) a member stops listing (the excess sums then
  /// take oneDNN's dense pass, which needs no list).
  ClampedScan(const ScannedData& data, int64_t limit = -1);

  /// The whole pass on up to `threads` threads (one under kScanOnTeam bytes): `to` (may be
  /// null: list only) the clamped copy of `from`. Marks the lists fresh for `from`.
  void run(const uint8_t* from, uint8_t* to, int threads);
  /// Empties the lists for a pass of `members` shares (run() calls it).
  void start(int members);
  /// Member `member` of `members`' share of the pass started (its runs copied and listed): run()
  /// calls it on each member of its region, tests in any order.
  void share(const uint8_t* from, uint8_t* to, int member, int members);
  /// Whether run() last listed `from` and nothing took the lists since; clears the mark.
  bool take_fresh(const uint8_t* from);
  /// Whether no member stopped at the limit: the lists hold every value above 127.
  bool complete() const;
  /// The members' lists of the last run, in member order.
  std::span<const std::vector<Excess>> lists() const { return {lists_.data(), members_}; }
  /// Their values, in member order.
  int64_t count() const;

  void set_limit(int64_t limit) { limit_ = limit; }
  /// Pairs the channels (2j, 2j+1) as oneDNN's kernel multiplies them (else each value is
  /// clamped at 127). Needs an even channel count.
  void set_paired(bool paired);
  bool paired() const { return paired_; }
  /// What the clamp takes off `from` (x minus its clamped copy), on up to `threads` threads as
  /// run() splits its pass (one under kScanOnTeam bytes): the data of oneDNN's dense pass over
  /// the excess, whose pairs hold one nonzero value.
  void excess(const uint8_t* from, uint8_t* to, int threads) const;

  /// Bytes from which run() splits the pass on its team: the intra-op rule's bytes per thread
  /// (intra_op_team.h). On AVX2 nodes of 2 threads (docs/results/heldout-speed.md, 2026-11-30
  /// 22:40 UTC, loaded host) the region's node took 0.97-1.07x the time of the node scanning
  /// on one thread on data of 10-200 KiB, 0.96x on 400 KiB.
  static constexpr int64_t kScanOnTeam = static_cast<int64_t>(kIntraOpBytesPerThread);

 private:
  ScannedData d_;
  int64_t limit_ = -1;
  bool paired_ = false;
  std::vector<std::vector<Excess>> lists_;  // Per member; their capacities stay.
  std::size_t members_ = 0;
  const uint8_t* fresh_ = nullptr;
};

}  // namespace cleave::quantize_detail
