// Conv and ConvTranspose nodes as convolution problems, and their descriptors' parts.
#include "runtime/kernels/nn/conv_problem.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "runtime/kernels/dnnl_util.h"

namespace cleave::conv_detail {

namespace {

std::vector<int64_t> kernel_from_weights(const KernelContext& context, const Tensor& weights) {
  std::vector<int64_t> kernel(weights.shape().begin() + 2, weights.shape().end());
  std::vector<int64_t> declared = context.node.ints_attribute("kernel_shape");
  if (!declared.empty() && declared != kernel) {
    throw Error(fmt::format("{}: kernel_shape [{}] disagrees with the weights' spatial dims [{}]",
                            context.where(), fmt::join(declared, ","), fmt::join(kernel, ",")));
  }
  return kernel;
}

void check_ranks(const KernelContext& context, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3 || x.rank() > 5) {
    throw UnsupportedError(
        fmt::format("{}: input {} has rank {}; only 1-D to 3-D convolutions "
                    "(rank 3 to 5) are supported",
                    context.where(), x.describe(), x.rank()));
  }
  if (w.rank() != x.rank()) {
    throw Error(fmt::format("{}: weights {} must have the input's rank {}", context.where(),
                            w.describe(), x.rank()));
  }
}

std::vector<int64_t> spatial_ints(const KernelContext& context, std::string_view key, std::size_t n,
                                  int64_t fallback) {
  std::vector<int64_t> values = context.node.ints_attribute(key);
  if (values.empty()) return std::vector<int64_t>(n, fallback);
  if (values.size() != n) {
    throw Error(fmt::format("{}: attribute '{}' has {} values, expected {}", context.where(), key,
                            values.size(), n));
  }
  return values;
}

}  // namespace

ConvProblem conv_problem(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& w = context.input(1);
  check_ranks(context, x, w);
  ConvProblem p;
  p.batch = x.dim(0);
  p.channels_in = x.dim(1);
  p.channels_out = w.dim(0);
  p.groups = context.node.int_attribute("group", 1);
  if (p.groups < 1 || p.channels_in != w.dim(1) * p.groups || p.channels_out % p.groups != 0) {
    throw Error(
        fmt::format("{}: input {} and weights {} do not fit group {} (need C = W[1] * group, "
                    "M divisible by group)",
                    context.where(), x.describe(), w.describe(), p.groups));
  }
  std::vector<int64_t> spatial(x.shape().begin() + 2, x.shape().end());
  WindowGeometry g = window_geometry(context, spatial, kernel_from_weights(context, w), false);
  p.kernel = g.kernel;
  p.strides = g.strides;
  p.dilations = g.dilations;
  p.pads_begin = g.pads_begin;
  p.pads_end = g.dnnl_pads_end;
  p.output_shape = {p.batch, p.channels_out};
  p.output_shape.insert(p.output_shape.end(), g.output.begin(), g.output.end());
  if (p.groups == 1) {
    p.user_weights = plain_desc(w.shape());
  } else {
    std::vector<int64_t> grouped = {p.groups, p.channels_out / p.groups, w.dim(1)};
    grouped.insert(grouped.end(), p.kernel.begin(), p.kernel.end());
    p.user_weights = plain_desc(grouped);
  }
  return p;
}

ConvProblem conv_transpose_problem(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& w = context.input(1);
  check_ranks(context, x, w);
  ConvProblem p;
  p.transposed = true;
  p.batch = x.dim(0);
  p.channels_in = x.dim(1);
  p.groups = context.node.int_attribute("group", 1);
  if (p.groups < 1 || p.channels_in != w.dim(0) || p.channels_in % p.groups != 0) {
    throw Error(
        fmt::format("{}: input {} and weights {} do not fit group {} (need C = W[0], C "
                    "divisible by group)",
                    context.where(), x.describe(), w.describe(), p.groups));
  }
  p.channels_out = w.dim(1) * p.groups;
  std::size_t n = x.rank() - 2;
  p.kernel = kernel_from_weights(context, w);
  p.strides = spatial_ints(context, "strides", n, 1);
  p.dilations = spatial_ints(context, "dilations", n, 1);
  std::vector<int64_t> output_padding = spatial_ints(context, "output_padding", n, 0);
  std::vector<int64_t> pads = spatial_ints(context, "pads", 2 * n, 0);
  std::vector<int64_t> requested = context.node.ints_attribute("output_shape");
  if (requested.size() == n + 2) requested.erase(requested.begin(), requested.begin() + 2);
  if (!requested.empty() && requested.size() != n) {
    throw Error(fmt::format("{}: output_shape [{}] should list {} spatial sizes", context.where(),
                            fmt::join(requested, ","), n));
  }
  std::string auto_pad = context.node.string_attribute("auto_pad", "NOTSET");
  p.output_shape = {p.batch, p.channels_out};
  for (std::size_t i = 0; i < n; ++i) {
    if (p.strides[i] < 1 || p.dilations[i] < 1 || p.kernel[i] < 1) {
      throw Error(
          fmt::format("{}: strides, dilations and kernel sizes must be positive", context.where()));
    }
    int64_t in = x.dim(i + 2);
    int64_t natural =
        p.strides[i] * (in - 1) + output_padding[i] + (p.kernel[i] - 1) * p.dilations[i] + 1;
    int64_t begin = pads[i], end = pads[i + n];
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!requested.empty() || same) {
      int64_t out = !requested.empty() ? requested[i] : in * p.strides[i];
      int64_t total = natural - out;
      // ONNX: SAME_UPPER puts the smaller half first, everything else the larger half; halves
      // round down (as Python's //), so a negative total (a larger output) grows the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      begin = auto_pad == "SAME_UPPER" ? half : total - half;
      end = total - begin;
    } else if (auto_pad == "VALID") {
      begin = end = 0;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      throw Error(
          fmt::format("{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                      context.where(), auto_pad));
    }
    int64_t out = natural - begin - end;
    if (out < 1)
      throw Error(fmt::format("{}: spatial output size {} along axis {}", context.where(), out, i));
    p.pads_begin.push_back(begin);
    // output_padding extends the end: oneDNN only knows padding, so it shrinks the end pad.
    p.pads_end.push_back(end - output_padding[i]);
    p.output_shape.push_back(out);
  }
  // ONNX stores [C_in, C_out / group, k...]; oneDNN wants (groups,) out, in, k... dims.
  int64_t kernel_volume = 1;
  for (int64_t k : p.kernel) kernel_volume *= k;
  int64_t group_in = p.channels_in / p.groups, group_out = p.channels_out / p.groups;
  memory::dims dims, strides;
  if (p.groups > 1) {
    dims = {p.groups, group_out, group_in};
    strides = {group_in * group_out * kernel_volume, kernel_volume, group_out * kernel_volume};
  } else {
    dims = {group_out, group_in};
    strides = {kernel_volume, group_out * kernel_volume};
  }
  int64_t stride = kernel_volume;
  for (int64_t k : p.kernel) {
    dims.push_back(k);
    stride /= k;
    strides.push_back(stride);
  }
  p.user_weights = memory::desc(dims, memory::data_type::f32, strides);
  return p;
}

dnnl::post_ops fused_post_ops(const KernelContext& context, bool with_sum) {
  dnnl::post_ops ops;
  if (with_sum) ops.append_sum(1.0f);
  std::string activation = context.node.string_attribute("activation", "");
  if (activation == "Relu") {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  } else if (activation == "Clip") {
    float low =
        context.node.float_attribute("activation_min", std::numeric_limits<float>::lowest());
    float high = context.node.float_attribute("activation_max", std::numeric_limits<float>::max());
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, low, high);
  } else if (activation == "HardSwish") {
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
  } else if (activation == "Swish") {
    // Applied by ConvolutionKernel::run after the primitive: see swish_float.
  } else if (!activation.empty()) {
    throw UnsupportedError(
        fmt::format("{}: fused activation '{}' is not supported (Relu, Clip, Swish, HardSwish are)",
                    context.where(), activation));
  }
  return ops;
}

// oneDNN 2.6 has Winograd only for these: 2-D, 3x3, stride 1, no dilation, no groups.
bool winograd_shape(const ConvProblem& p) {
  return !p.transposed && p.groups == 1 && p.kernel == std::vector<int64_t>{3, 3} &&
         p.strides == std::vector<int64_t>{1, 1} && p.dilations == std::vector<int64_t>{1, 1};
}

bool winograd_pays(int64_t out_height, int64_t out_width, int64_t channels_in, int64_t channels_out,
                   const WinogradRun& run) {
  if (out_height < 0 || out_width < 0 || channels_in < 0 || channels_out < 0) return true;
  const int64_t pixels = out_height * out_width;
  if (pixels <= kWinogradTinyMapPixels) return false;
  const int64_t macs = pixels * channels_in * channels_out * 9;
  if (pixels <= kWinogradSmallMapPixels) return macs < kWinogradSmallMapDirectMacs;
  if (!run.own_kernel && run.threads > 1 && pixels <= kWinogradTeamMapPixels)
    return macs < kWinogradSmallMapDirectMacs || macs >= kWinogradTeamDirectMacsBelow;
  return !(run.own_kernel && pixels <= kOwnWinogradWideMapPixels &&
           channels_in >= kOwnWinogradWideChannels && channels_out >= kOwnWinogradWideChannels);
}

bool is_slow(const std::string& implementation) {
  return implementation.find("gemm") != std::string::npos ||
         implementation.find("ref") != std::string::npos;
}

}  // namespace cleave::conv_detail
