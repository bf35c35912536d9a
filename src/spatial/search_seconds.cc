// Seconds objective of the partition search: exact DP over (machine, start, missing halo).
#include "spatial/search_seconds.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace cleave {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

int64_t missing_halo(int64_t halo, int64_t prev_end, int64_t start) {
  return std::max<int64_t>(0, halo - std::max<int64_t>(0, prev_end - start));
}

double receive(const SecondsModel& model, int from, int to, int64_t missing) {
  if (missing <= 0) return 0;
  return model.links.receive_seconds(from, to,
                                     static_cast<double>(missing) * model.bytes_per_index);
}

// The sending end of the `missing` halo rows `from` sends a neighbour (the rows a boundary
// lacks are the same both ways: each side sends the other as many).
double send(const SecondsModel& model, int from, int64_t missing) {
  if (missing <= 0) return 0;
  return model.links.send_seconds(from, static_cast<double>(missing) * model.bytes_per_index);
}

void check(const SearchSpace& space, const SecondsModel& model) {
  if (space.speeds.empty() || space.length < 1) throw Error("search: empty search space");
  if (model.seconds_per_index.size() != space.speeds.size())
    throw Error("search: the seconds model needs one compute rate per machine");
}

}  // namespace

double partition_seconds(const SearchSpace& space, const SecondsModel& model,
                         const std::vector<Interval>& partition) {
  check(space, model);
  const int n = static_cast<int>(partition.size());
  double slowest = 0;
  for (int m = 0; m < n; ++m) {
    double t = static_cast<double>(partition[m].size()) * model.seconds_per_index[m];
    if (m > 0) {
      const int64_t left = missing_halo(model.halo, partition[m - 1].end, partition[m].begin);
      t += receive(model, m - 1, m, left) + send(model, m, left);
    }
    if (m + 1 < n) {
      const int64_t right = missing_halo(model.halo, partition[m].end, partition[m + 1].begin);
      t += receive(model, m + 1, m, right) + send(model, m, right);
    }
    slowest = std::max(slowest, t);
  }
  return slowest;
}

SearchResult search_partition_seconds(const SearchSpace& space, const SecondsModel& model) {
  const auto clock = std::chrono::steady_clock::now();
  check(space, model);
  const std::vector<std::vector<int64_t>> sizes = possible_sizes(space);
  const int n = static_cast<int>(sizes.size());
  const int64_t L = space.length;
  const int64_t halos = std::max<int64_t>(0, model.halo) + 1;
  // best[k][s][h]: least slowest-machine seconds of machines k..n-1, machine k starting at s
  // and lacking h halo indices on its left; choice[...]: its interval end and next start.
  auto at = [&](int64_t s, int64_t h) { return s * halos + h; };
  std::vector<std::vector<double>> best(n, std::vector<double>((L + 1) * halos, kNone));
  std::vector<std::vector<std::pair<int64_t, int64_t>>> choice(
      n, std::vector<std::pair<int64_t, int64_t>>((L + 1) * halos, {-1, -1}));
  SearchResult result;
  for (int k = n - 1; k >= 0; --k) {
    for (int64_t s = 0; s < (k == 0 ? 1 : L); ++s) {
      for (int64_t h = 0; h < (k == 0 ? 1 : halos); ++h) {
        const double left = k > 0 ? receive(model, k - 1, k, h) + send(model, k, h) : 0;
        double& value = best[k][at(s, h)];
        for (int64_t size : sizes[k]) {
          const int64_t e = s + size;
          if (e > L) break;
          const double own = static_cast<double>(size) * model.seconds_per_index[k] + left;
          if (k == n - 1) {
            if (e != L) continue;
            ++result.evaluated;
            if (own < value) {
              value = own;
              choice[k][at(s, h)] = {e, -1};
            }
            continue;
          }
          const int64_t lo = space.overlap ? s + 1 : e, hi = std::min(e, L - 1);
          for (int64_t t = lo; t <= hi; ++t) {
            const int64_t right = missing_halo(model.halo, e, t);
            const double rest = best[k + 1][at(t, right)];
            if (rest == kNone) continue;
            ++result.evaluated;
            const double v =
                std::max(own + receive(model, k + 1, k, right) + send(model, k, right), rest);
            if (v < value) {
              value = v;
              choice[k][at(s, h)] = {e, t};
            }
          }
        }
      }
    }
  }
  result.value = best[0][at(0, 0)];
  if (result.value != kNone) {
    int64_t s = 0, h = 0;
    for (int k = 0; k < n; ++k) {
      auto [e, t] = choice[k][at(s, h)];
      result.best.push_back({s, e});
      if (k + 1 < n) {
        h = missing_halo(model.halo, e, t);
        s = t;
      }
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
  result.log10_total = log10_partition_count(space);
  return result;
}

}  // namespace cleave
