// Ranks oneDNN convolution implementations and builds merged-group weights (conv_fallback.h).
#include "runtime/kernels/nn/conv_fallback.h"

#include <algorithm>

namespace cleave {

int implementation_rank(const std::string& implementation) {
  if (implementation.rfind("ref", 0) == 0 || implementation.find(":ref") != std::string::npos) {
    return 0;
  }
  if (implementation.find("gemm") != std::string::npos) return 1;
  return 2;
}

std::vector<GroupMerge> group_merges(int64_t groups, int64_t in_per_group, int64_t out_per_group,
                                     int64_t max_factor) {
  std::vector<GroupMerge> merges;
  if (groups < 2 || (in_per_group == 1 && out_per_group == 1)) return merges;
  // The smallest factor that fills 8-channel blocks (AVX2's) first, then 16 (AVX-512's): the
  // kernel picks whichever its ISA needs, and the least extra arithmetic wins.
  for (int64_t block : {8, 16}) {
    for (int64_t factor = 2; factor <= std::min(groups, max_factor); ++factor) {
      if (groups % factor != 0) continue;
      if ((in_per_group * factor) % block != 0 || (out_per_group * factor) % block != 0) continue;
      bool seen = std::any_of(merges.begin(), merges.end(),
                              [&](const GroupMerge& m) { return m.factor == factor; });
      if (!seen) merges.push_back(GroupMerge{factor});
      break;
    }
  }
  return merges;
}

std::vector<float> merged_group_weights(const float* weights, int64_t groups, int64_t out_per_group,
                                        int64_t in_per_group, int64_t kernel_volume,
                                        GroupMerge merge) {
  const int64_t factor = merge.factor;
  const int64_t merged_in = in_per_group * factor;
  std::vector<float> merged(
      static_cast<std::size_t>(groups * out_per_group * merged_in * kernel_volume), 0.0f);
  // Output channel o of original group g keeps its place (g * out_per_group + o); inside its
  // merged group it reads only the input channels of g, which sit at (g % factor) * in_per_group.
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t in_offset = (g % factor) * in_per_group;
    for (int64_t o = 0; o < out_per_group; ++o) {
      const int64_t out_channel = g * out_per_group + o;
      const float* from = weights + out_channel * in_per_group * kernel_volume;
      float* to = merged.data() + (out_channel * merged_in + in_offset) * kernel_volume;
      std::copy(from, from + in_per_group * kernel_volume, to);
    }
  }
  return merged;
}

}  // namespace cleave
