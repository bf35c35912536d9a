// Ways around oneDNN's reference convolution: ranking its implementations, merging small groups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cleave {

/// How good a oneDNN implementation is for choosing between candidates: 0 for the reference
/// kernels ("ref:any", hundreds of times slower), 1 for im2col + sgemm ("x64:gemm:jit"), 2 for
/// the jit kernels written for the shape (jit, jit_dw, brgconv, ...).
int implementation_rank(const std::string& implementation);

/// A grouped convolution with few channels per group, computed as one with fewer, larger groups
/// whose weights are block diagonal: oneDNN's jit kernels need a group's channels to fill its
/// channel blocks, else it runs gemm per group or its reference kernel. `factor` groups become
/// one, so the merged convolution does `factor` times the arithmetic.
struct GroupMerge {
  int64_t factor = 1;
};

/// Merge factors worth trying for `groups` groups of `in_per_group` input and `out_per_group`
/// output channels, best first: each divides `groups`, fills whole blocks of 8 or 16 channels,
/// and multiplies the arithmetic by at most `max_factor`. Empty for depthwise convolutions
/// (one channel per group: oneDNN's jit_dw serves them) and for ungrouped ones.
std::vector<GroupMerge> group_merges(int64_t groups, int64_t in_per_group, int64_t out_per_group,
                                     int64_t max_factor = 4);

/// Block-diagonal weights of the merged convolution, [groups / factor, out_per_group * factor,
/// in_per_group * factor, kernel...] row-major, from ONNX's [groups * out_per_group,
/// in_per_group, kernel...] ones; `kernel_volume` is the product of the kernel sizes.
std::vector<float> merged_group_weights(const float* weights, int64_t groups, int64_t out_per_group,
                                        int64_t in_per_group, int64_t kernel_volume,
                                        GroupMerge merge);

}  // namespace cleave
