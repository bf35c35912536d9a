// The queue of a shared link: first gap from a message's ready time, a token bucket's burst.
#include "machine/shared_medium.h"

#include <algorithm>
#include <limits>

namespace cleave {

double SharedMedium::cross(double ready, double bytes, double bandwidth) {
  if (!(bandwidth > 0)) return std::numeric_limits<double>::infinity();
  const double seconds = bytes / bandwidth;
  if (!(seconds > 0)) return ready;
  double start = ready;
  // The intervals are disjoint and sorted, so their ends are too: skip those over by `ready`.
  auto place = std::upper_bound(
      booked_.begin(), booked_.end(), start,
      [](double t, const std::pair<double, double>& booked) { return t < booked.second; });
  for (; place != booked_.end() && place->first < start + seconds; ++place) start = place->second;
  booked_.insert(place, {start, start + seconds});
  return std::max(ready, start + seconds - burst_bytes_ / bandwidth);
}

}  // namespace cleave
