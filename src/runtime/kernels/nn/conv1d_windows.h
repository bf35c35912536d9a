// Internal to the int8 convolution kernels: a one-channel 1-D convolution (an STFT as a strided
// Conv1d) as oneDNN's int8 matmul over its windows.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include <dnnl.hpp>

#include "runtime/kernel.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/tensor.h"

namespace cleave::conv_detail {

/// Where the node's data, weights and (int32) bias are among its inputs.
struct Conv1dWindowsOperands {
  std::size_t x = 0, w = 1;
  std::optional<std::size_t> bias;
};

/// Whether conv1d_windows takes `p` on data `x`: plain data of one channel, one spatial dim,
/// no padding at the start, none read past the end, no dilation, one group.
bool conv1d_windows_fit(const ConvProblem& p, const Tensor& x);

/// The convolution `p` as oneDNN's int8 matmul over its windows, each output position's window
/// of the data copied as one row [batch · width, taps] times the packed weights [taps,
/// channels], its rows [width, channels] turned into the output's [channels, width], where
/// conv1d_windows_fit; s8 weights of zero point 0, with `attr` (the data's zero point, the
/// output scales and zero point: quantize_detail::make_dnnl_int8) and an output of `output`.
/// Throws dnnl::error where oneDNN has no matmul for it.
std::unique_ptr<Kernel> conv1d_windows(const KernelContext& context, const ConvProblem& p,
                                       const Conv1dWindowsOperands& at, DataType output,
                                       const dnnl::primitive_attr& attr);

}  // namespace cleave::conv_detail
