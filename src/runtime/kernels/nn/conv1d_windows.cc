// A one-channel 1-D int8 convolution as oneDNN's int8 matmul over its windows.
#include "runtime/kernels/nn/conv1d_windows.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/int8_implementation.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave::conv_detail {

namespace {

using elementwise::plain_output;

// With VNNI, the one-channel 1-D convolution (an STFT as a strided Conv1d) as oneDNN's int8
// matmul over its windows: each output position's window of the data, copied as one row
// [batch · width, taps], times the weights [taps, channels], then the rows [width, channels] of
// each batch turned into the output's [channels, width]. oneDNN's int8 convolution pads the one
// input channel to a group of 4 for vpdpbusd and reorders the data every run
// (mel_frontend_int8 on Zen 5: 0.32 ms for this node, ONNX Runtime's im2col GEMM 0.10).
class WindowsMatmulConv final : public Kernel, public PackedConstants {
 public:
  WindowsMatmulConv(const KernelContext& context, const ConvProblem& p,
                    const Conv1dWindowsOperands& at, DataType output_type,
                    const dnnl::primitive_attr& attr)
      : spec_(plain_output(output_type, p.output_shape)),
        x_(at.x),
        w_(at.w),
        batch_(p.batch),
        width_(p.output_shape[2]),
        taps_(p.kernel[0]),
        channels_(p.channels_out),
        length_(context.input(at.x).dim(2)),
        stride_(p.strides[0]),
        element_(static_cast<int64_t>(element_size(output_type))),
        bias_(at.bias) {
    using dnnl::memory;
    const int64_t rows = batch_ * width_;
    const memory::desc src = plain_desc(std::vector<int64_t>{rows, taps_},
                                        dnnl_data_type(context.input(at.x).dtype(), context));
    const memory::desc dst =
        plain_desc(std::vector<int64_t>{rows, channels_}, dnnl_data_type(output_type, context));
    const memory::desc weights({taps_, channels_}, memory::data_type::s8, memory::format_tag::any);
    const memory::desc bias =
        plain_desc(std::vector<int64_t>{1, channels_}, memory::data_type::s32);
    const dnnl::matmul::desc op =
        bias_ ? dnnl::matmul::desc(src, weights, bias, dst) : dnnl::matmul::desc(src, weights, dst);
    dnnl::matmul::primitive_desc descriptor = with_chosen_implementation(
        [&] { return dnnl::matmul::primitive_desc(op, attr, context.engine); },
        Int8Work{rows * taps_ * channels_, context.threads, taps_});
    step_ = DnnlStep(dnnl::matmul(descriptor), descriptor, context.engine);
    step_.declare(DNNL_ARG_SRC, src);
    step_.declare(DNNL_ARG_WEIGHTS, descriptor.weights_desc());
    step_.declare(DNNL_ARG_DST, dst);
    if (bias_) step_.declare(DNNL_ARG_BIAS, bias);
    // The weights [channels, 1, taps] read as [taps, channels] (format ba) and packed once.
    const memory::desc given({taps_, channels_}, memory::data_type::s8, memory::format_tag::ba);
    weights_ =
        pack_constant(context.input(at.w).raw(), given, descriptor.weights_desc(), context.engine);
    windows_.resize(static_cast<std::size_t>(rows * taps_));
    rows_.resize(static_cast<std::size_t>(rows * channels_ * element_));
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override {
    return step_.implementation() + " (int8 conv1d as a matmul of its windows)";
  }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != w_;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const auto* x = static_cast<const uint8_t*>(inputs[x_]->raw());
    uint8_t* window = windows_.data();
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t w = 0; w < width_; ++w, window += taps_)
        std::memcpy(window, x + b * length_ + w * stride_, static_cast<std::size_t>(taps_));
    }
    step_.set(DNNL_ARG_SRC, windows_.data());
    step_.set(DNNL_ARG_WEIGHTS, weights_->data());
    step_.set(DNNL_ARG_DST, rows_.data());
    if (bias_) step_.set(DNNL_ARG_BIAS, inputs[*bias_]->raw());
    step_.execute(stream);
    stream.wait();
    auto* out = static_cast<uint8_t*>(outputs[0]->raw());
    if (element_ == 1) {
      transpose_rows<uint8_t>(out);
    } else {
      transpose_rows<int32_t>(reinterpret_cast<int32_t*>(out));
    }
  }

 private:
  // rows_ [batch][width][channels] into the output's [batch][channels][width].
  template <typename T>
  void transpose_rows(T* out) const {
    const T* from = reinterpret_cast<const T*>(rows_.data());
    for (int64_t b = 0; b < batch_; ++b) {
      const T* rows = from + b * width_ * channels_;
      T* planes = out + b * channels_ * width_;
      for (int64_t w = 0; w < width_; ++w) {
        for (int64_t c = 0; c < channels_; ++c) planes[c * width_ + w] = rows[w * channels_ + c];
      }
    }
  }

  OutputSpec spec_;
  std::size_t x_, w_;
  int64_t batch_, width_, taps_, channels_, length_, stride_, element_;
  std::optional<std::size_t> bias_;
  DnnlStep step_;
  std::shared_ptr<Buffer> weights_;
  std::vector<uint8_t> windows_;  // [batch · width][taps]: each output position's window.
  std::vector<uint8_t> rows_;     // The matmul's output, [batch · width][channels].
};

}  // namespace

bool conv1d_windows_fit(const ConvProblem& p, const Tensor& x) {
  return !x.is_blocked() && p.kernel.size() == 1 && p.groups == 1 && p.channels_in == 1 &&
         p.pads_begin[0] == 0 && p.pads_end[0] <= 0 && p.dilations[0] == 1 &&
         x.dim(2) >= p.kernel[0];
}

std::unique_ptr<Kernel> conv1d_windows(const KernelContext& context, const ConvProblem& p,
                                       const Conv1dWindowsOperands& at, DataType output,
                                       const dnnl::primitive_attr& attr) {
  return std::make_unique<WindowsMatmulConv>(context, p, at, output, attr);
}

}  // namespace cleave::conv_detail
