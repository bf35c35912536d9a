// Internal to the convolution kernels: a dilated convolution that oneDNN leaves to gemm, run as
// one 1x1 convolution per kernel tap over the outputs where that tap reads the input.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/conv_problem.h"

namespace cleave::conv_detail {

/// One tap's 1x1 convolution and the copies around it.
struct TapStep {
  LayoutReorder gather;  ///< The tap's input rectangle into the gather buffer; unused when
                         ///< the tap reads the whole source as it is.
  bool reads_source = false;
  DnnlStep convolution;
  std::shared_ptr<Buffer> packed_weights;
  DnnlStep scatter;  ///< Adds the tap's output into its rectangle of the destination; unused
                     ///< for the last tap, which writes the whole destination.
};

/// A 2-D dilated convolution as a sum over its kernel taps. Under AVX2 oneDNN 2.6 computes a
/// dilated convolution by im2col and gemm over every tap, including the taps that read only
/// padding for most outputs (DeepLab's ASPP: 18% of the taps of its dilation-12 branch read the
/// 14x14 map); each tap alone is a 1x1 convolution on the rectangle of outputs where it reads
/// the input, which runs on a jit kernel, so only the live taps are computed.
class TapSplit {
 public:
  const dnnl::memory::desc& source() const { return source_; }
  const dnnl::memory::desc& destination() const { return destination_; }
  std::size_t taps() const { return taps_.size(); }
  /// The taps' kernel, "jit_1x1:avx2 in 7 taps".
  std::string implementation() const;
  /// Computes the convolution of `source` (laid out as source()) into `destination` (laid out
  /// as destination()); `bias` may be null.
  void run(const void* source, const float* bias, void* destination, dnnl::stream& stream);

 private:
  friend std::optional<TapSplit> split_dilated_taps(const dnnl::engine&, const ConvProblem&,
                                                    const dnnl::memory::desc&, const float*, bool,
                                                    const dnnl::post_ops&);
  dnnl::memory::desc source_, destination_;
  std::vector<TapStep> taps_;  ///< The tap that covers every output comes last.
  std::shared_ptr<Buffer> gathered_, computed_;
};

/// The split of a 2-D, ungrouped convolution with a dilation above 1, given its plain (OIHW)
/// weights and its input's layout: one step per tap that reads the input for some output,
/// the last being one that reads it for every output (it adds the others and applies
/// `post_ops`, eltwise ones only). nullopt when the kernel has more than 64 taps, no tap covers
/// every output, or some tap's 1x1 convolution would not run on a jit kernel.
std::optional<TapSplit> split_dilated_taps(const dnnl::engine& engine, const ConvProblem& p,
                                           const dnnl::memory::desc& given, const float* weights,
                                           bool has_bias, const dnnl::post_ops& post_ops);

}  // namespace cleave::conv_detail
