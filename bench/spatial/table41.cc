// Reproduces the thesis's Table 4.1: the pruned partition search on a 1x3x448x488 output.
//
// Build (after `cmake --build build --target cleave`):
//   cd build && g++ -O2 -std=c++20 -DFMT_SHARED -I../src ../bench/spatial/table41.cc \
//       $(sed -n '/^build cleave:/,/LINK_LIBRARIES/s/.*LINK_LIBRARIES = //p' build.ninja) \
//       -o /tmp/table41
// Run:
//   /tmp/table41 [h|w]   (default w: the 488-wide direction)
// Prints one markdown row per machine count and threshold: log10 of the partitions in the
// search space, partitions evaluated by the pruned search, and its time, with equal speeds and
// the thesis's weights all 1 (operations, data, overlap, balance), overlap allowed.
#include <cstdio>
#include <string>

#include "spatial/search.h"

int main(int argc, char** argv) {
  const bool height = argc > 1 && std::string(argv[1]) == "h";
  std::printf(
      "| machines | threshold %% | total (log10) | evaluated | search s "
      "|\n|---|---|---|---|---|\n");
  for (int machines : {2, 4, 8, 16}) {
    for (double threshold : {5.0, 10.0, 15.0, 20.0}) {
      cleave::SearchSpace space;
      space.length = height ? 448 : 488;
      space.other_elements = 3 * (height ? 488 : 448);
      space.speeds.assign(machines, 1.0);
      space.threshold_percent = threshold;
      space.overlap = true;
      cleave::SearchWeights weights;
      weights.halo = 2;  // a 3x3 stride-1 convolution: one row each side
      cleave::SearchResult r = cleave::search_partition(space, weights, true);
      std::printf("| %d | %.0f | %.1f | %lld | %.4f |\n", machines, threshold, r.log10_total,
                  static_cast<long long>(r.evaluated), r.seconds);
      std::fflush(stdout);
    }
  }
}
