// Internal to the convolution kernels: a Conv or ConvTranspose node as one problem (shapes,
// strides, pads, weight layout), its fused post-ops, and its oneDNN primitive descriptors.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace cleave::conv_detail {

using dnnl::memory;

/// Everything that differs between a convolution and a transposed one once shapes are known.
struct ConvProblem {
  bool transposed = false;
  int64_t batch = 0, channels_in = 0, channels_out = 0, groups = 1;
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end;  // oneDNN pads_end.
  std::vector<int64_t> output_shape;  // Full (N, C, spatial...).
  memory::desc user_weights;          // How the ONNX weight bytes are laid out.
};

/// The problem of a Conv node, from its inputs' shapes and attributes (Error naming the node).
ConvProblem conv_problem(const KernelContext& context);
/// The problem of a ConvTranspose node (output_shape, output_padding, auto_pad resolved).
ConvProblem conv_transpose_problem(const KernelContext& context);

/// The node's fused activation (and a fused Add as a sum) as oneDNN post-ops.
dnnl::post_ops fused_post_ops(const KernelContext& context, bool with_sum);

/// Primitive descriptor of either kind of convolution, for the given src and dst layouts.
template <typename Primitive>
typename Primitive::primitive_desc make_descriptor(const ConvProblem& p, const memory::desc& src,
                                                   const memory::desc& dst, bool with_bias,
                                                   const dnnl::primitive_attr& attr,
                                                   const dnnl::engine& engine,
                                                   bool winograd = false) {
  memory::dims weight_dims = p.user_weights.dims();
  memory::desc weights(weight_dims, memory::data_type::f32, memory::format_tag::any);
  memory::dims strides(p.strides.begin(), p.strides.end());
  memory::dims dilations;
  for (int64_t d : p.dilations) dilations.push_back(d - 1);
  memory::dims pads_begin(p.pads_begin.begin(), p.pads_begin.end());
  memory::dims pads_end(p.pads_end.begin(), p.pads_end.end());
  dnnl::algorithm algorithm = p.transposed ? dnnl::algorithm::deconvolution_direct
                              : winograd   ? dnnl::algorithm::convolution_winograd
                                           : dnnl::algorithm::convolution_direct;
  auto prop = dnnl::prop_kind::forward_inference;
  if (with_bias) {
    memory::desc bias({p.channels_out}, memory::data_type::f32, memory::format_tag::x);
    typename Primitive::desc desc(prop, algorithm, src, weights, bias, dst, strides, dilations,
                                  pads_begin, pads_end);
    return typename Primitive::primitive_desc(desc, attr, engine);
  }
  typename Primitive::desc desc(prop, algorithm, src, weights, dst, strides, dilations, pads_begin,
                                pads_end);
  return typename Primitive::primitive_desc(desc, attr, engine);
}

/// oneDNN 2.6 has Winograd only for these: 2-D, 3x3, stride 1, no dilation, no groups.
bool winograd_shape(const ConvProblem& p);

/// The Winograd family's small maps: at most kWinogradSmallMapPixels output pixels per map.
constexpr int64_t kWinogradSmallMapPixels = 25;
/// On a small map, multiply-adds from which the direct kernel wins, and maps (1x1 to 2x2) where
/// it wins at any size.
constexpr int64_t kWinogradSmallMapDirectMacs = 1'000'000;
constexpr int64_t kWinogradTinyMapPixels = 4;
/// oneDNN's kernel on a team of 2 threads or more: maps of at most kWinogradTeamMapPixels
/// (6x6, 7x7) run direct from kWinogradSmallMapDirectMacs up to kWinogradTeamDirectMacsBelow.
constexpr int64_t kWinogradTeamMapPixels = 49;
constexpr int64_t kWinogradTeamDirectMacsBelow = 12'000'000;
/// cleave's own F(2x2, 3x3) kernel (below AVX-512) runs direct on maps of at most
/// kOwnWinogradWideMapPixels from kOwnWinogradWideChannels input and output channels.
constexpr int64_t kOwnWinogradWideMapPixels = 64;
constexpr int64_t kOwnWinogradWideChannels = 512;

/// Which Winograd kernel would run a convolution, and on how many threads: what
/// winograd_pays' answer depends on besides the shape.
struct WinogradRun {
  int threads = 1;          ///< The intra-op team the kernel would run on.
  bool own_kernel = false;  ///< cleave's own AVX2 kernel; false: oneDNN's (AVX-512).
};

/// Whether Winograd pays for a convolution of winograd_shape writing `channels_out` maps of
/// out_height x out_width from `channels_in`, run as `run` says (Winograd against the blocked
/// direct kernel per node, docs/results/heldout-speed.md, 2026-11-30, this Xeon):
///  - not on a tiny map (kWinogradTinyMapPixels): 1.5-2.9x the direct kernel at 2x2;
///  - not on a small map (to 5x5) from kWinogradSmallMapDirectMacs: F(2x2, 3x3)'s few tiles (4
///    on 4x4, 9 covering 6x6 on 5x5) took 1.03-1.5x the direct kernel's time from about 1.2 M
///    multiply-adds at 1 and 2 threads, and 0.58-1.01x below 1 M;
///  - oneDNN's kernel on 2 threads or more, not on 6x6 and 7x7 maps from 1 M up to 12 M
///    multiply-adds: 1.07-1.92x at 64 channels and 128 -> 32 (1.3-1.8 M), 0.98-1.14x at 128
///    and 160 (5.3-11.3 M), where 1 thread gives 0.57-1.00x; from 12 M it keeps Winograd
///    (0.67-1.06x from 192 to 512 channels; resnet50's 7x7 512-channel layer4 sent direct ran
///    1.04x its time), as do maps of 8x8 and up (0.66-1.25x, mostly below 1);
///  - cleave's own kernel (AVX2), not on maps up to 8x8 (16 to 36 tiles of 4x4) from 512
///    channels in and out, 9.4 MiB of plain weights and more: 1.07-2.03x the direct kernel at
///    1 thread and 0.73-1.88x at 2 (loaded host, three sweeps), against 0.54-0.95x at 256
///    channels and 0.60-0.94x for 512 at 10x10.
/// A size not known (negative) is taken to pay: the kernel decides again once it is.
bool winograd_pays(int64_t out_height, int64_t out_width, int64_t channels_in, int64_t channels_out,
                   const WinogradRun& run);

/// Whether oneDNN's implementation name is a slow one (gemm or ref).
bool is_slow(const std::string& implementation);

}  // namespace cleave::conv_detail
