// One medium that every message crosses in turn (Machine::shared_link): its booked intervals.
#pragma once

#include <utility>
#include <vector>

namespace cleave {

/// The booked intervals of a shared link, for the simulator's clock and the spatial partition
/// search alike (one queue rule): a message takes the first gap of bytes / bandwidth from when
/// its sender has it, in the order the messages are booked (not their time order: a message
/// booked later takes an earlier gap that is long enough), and is across when the medium's
/// rate would have carried it less the burst (a token bucket's depth, burst / bandwidth),
/// never before it was sent.
class SharedMedium {
 public:
  explicit SharedMedium(double burst_bytes = 0) : burst_bytes_(burst_bytes) {}
  /// Forgets every booking.
  void clear() { booked_.clear(); }
  /// Books `bytes` at `bandwidth` bytes/s from `ready`; returns when they are across (before
  /// the link's latency). +inf when bandwidth is not positive (no link).
  double cross(double ready, double bytes, double bandwidth);

 private:
  std::vector<std::pair<double, double>> booked_;  // (start, end), sorted and disjoint
  double burst_bytes_ = 0;
};

}  // namespace cleave
