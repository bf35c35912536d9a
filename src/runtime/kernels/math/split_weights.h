// Exact int8 products on oneDNN without VNNI: the weights split into two halves whose
// products cannot saturate oneDNN's int16 pair sums, and the two int32 sums added here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave::quantize_detail {

/// Whether oneDNN's int8 products need the split: no VNNI, so its kernels multiply u8 by s8
/// with vpmaddubsw, which adds each pair of products into a saturating int16 (255·127·2 does
/// not fit). Weights w = 16·high + low, high in [-8, 7] and low in [0, 15], keep every pair
/// within 255·15·2.
bool int8_products_need_split();

/// s8 weights split into (high, low), both s8 and of `weights`' shape: weights = 16·high + low.
std::pair<Tensor, Tensor> split_weights(const Tensor& weights);

/// Where the split kernel finds its operands and how it writes its output.
struct SplitSums {
  std::size_t weights = 1;          ///< The weights input: run from the halves' packed copies.
  int64_t channels = 1;             ///< Output channels (a convolution's) or columns (a product's).
  int64_t channel_stride = 1;       ///< Sums between one channel's and the next's: 1 channels-last.
  std::optional<std::size_t> bias;  ///< The int32 bias input, added to every sum.
  std::optional<std::size_t> y_scale;  ///< Requantized (scales at 1, 4, this): else int32 out.
  int high_shift = 4;  ///< The first kernel's sums count 2^this times (0: two parts).
  std::string note = "weights split in two";  ///< Said after the first kernel's implementation.
};

/// A second part whose sums the combining pass adds itself on the node's team, each thread its
/// share of the output channels, rather than one written whole before it (clamped_data.h's
/// excess sums: no pass of their own, no fork and join of their own).
class TeamPartSums {
 public:
  virtual ~TeamPartSums() = default;
  /// What prepare left for the combining pass.
  enum class Prepared {
    kWhole,    ///< `whole` holds every sum (as the kernel's run would have written them).
    kByUnits,  ///< add_units adds them.
    kNone,     ///< Every sum is 0.
  };
  /// Runs what precedes the team's region on the calling thread (reading the data; oneDNN's
  /// passes, which fork their own team). `whole` is the int32 sums' tensor, written for kWhole.
  virtual Prepared prepare(const std::vector<const Tensor*>& inputs, Tensor& whole,
                           dnnl::stream& stream) = 0;
  /// The units add_units splits the output channels by.
  virtual int64_t units() const = 0;
  /// Adds the sums of output units [first, last) to channels-last `sums`; with `clear`, sets
  /// those channels to them instead. Called from an OpenMP region: must not throw.
  virtual void add_units(int32_t* sums, int64_t first, int64_t last, bool clear) const = 0;
};

/// The kernel that runs `high` and `low`, each writing int32 sums (in the same order: plain or
/// channels-last), and writes 2^high_shift·high + low + bias as `output` says: requantized to
/// u8/i8, or the int32 sums. The weights' halves, or the clamped data's sums and the excess's
/// (clamped_data.h). A `low` that is a TeamPartSums adds its sums inside the combining pass:
/// one OpenMP region on the node's team with a barrier between the parts' sums and the
/// requantization.
std::unique_ptr<Kernel> make_split_sums_kernel(std::unique_ptr<Kernel> high,
                                               std::unique_ptr<Kernel> low, OutputSpec output,
                                               const SplitSums& how, int threads);

}  // namespace cleave::quantize_detail
