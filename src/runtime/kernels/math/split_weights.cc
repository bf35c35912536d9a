// The split-weights int8 kernel: two oneDNN int32 sums added and requantized exactly.
#include "runtime/kernels/math/split_weights.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/staging.h"

namespace cleave::quantize_detail {

namespace {

// 2^shift·high + low + bias in place of high, in runs of one channel (plain) or across the channels
// (channels-last), so that the inner loops vectorise.
void add_halves(int32_t* sums, const int32_t* low, const int32_t* bias, int shift, int64_t begin,
                int64_t end, int64_t channels, int64_t stride) {
  int64_t channel = (begin / stride) % channels;
  for (int64_t i = begin; i < end; channel = channel + 1 == channels ? 0 : channel + 1) {
    if (stride == 1) {
      const int64_t run = std::min(end - i, channels - channel);
      for (int64_t k = 0; k < run; ++k) {
        sums[i + k] = (sums[i + k] << shift) + low[i + k] + (bias ? bias[channel + k] : 0);
      }
      channel += run - 1;
      i += run;
    } else {
      const int64_t run = std::min(end - i, stride - i % stride);
      const int32_t add = bias ? bias[channel] : 0;
      for (int64_t k = 0; k < run; ++k) sums[i + k] = (sums[i + k] << shift) + low[i + k] + add;
      i += run;
    }
  }
}

// Sums from which the combining pass runs on the node's team. The team was already chosen from
// the node's work (intra_op_team.h); the elementwise threshold (64 Ki) had left this pass, about
// a third of an AVX2 two-part node's time, on one thread of a team of two.
constexpr int64_t kCombineOnTeam = 4096;

class SplitSumsKernel final : public Kernel, public PackedConstants {
 public:
  SplitSumsKernel(std::unique_ptr<Kernel> high, std::unique_ptr<Kernel> low, OutputSpec output,
                  const SplitSums& how, int threads)
      : high_(std::move(high)),
        low_(std::move(low)),
        spec_(std::move(output)),
        how_(how),
        threads_(threads) {}

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override {
    return high_->implementation() + " (" + how_.note + ")";
  }
  // Both halves run from their packed copies: the loaded weights may go.
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != how_.weights;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    // The sums live in the thread's staging slots, shared by every such kernel it runs (one
    // buffer per node held r3d_18_int8's 27 MiB of them). Requantized: the high part's sums are
    // added to in a buffer of their own.
    Tensor high_sums,
        low_sums = staging_tensor(StagingSlot::kSecondSums, DataType::kInt32, spec_.shape);
    if (how_.y_scale) {
      high_sums = staging_tensor(StagingSlot::kFirstSums, DataType::kInt32, spec_.shape);
    }
    Tensor* high = how_.y_scale ? &high_sums : outputs[0];
    high_->run(inputs, {high}, stream);
    low_->run(inputs, {&low_sums}, stream);
    stream.wait();
    int32_t* sums = high->data<int32_t>();
    const int32_t* low = low_sums.data<int32_t>();
    const int32_t* bias = how_.bias ? inputs[*how_.bias]->data<int32_t>() : nullptr;
    std::optional<Requantize> requantize;
    if (how_.y_scale) requantize = requantize_of(inputs, how_.channels, *how_.y_scale);
    auto* out = static_cast<uint8_t*>(outputs[0]->raw());
    const SplitSums& how = how_;
    elementwise::parallel_for(
        high->element_count(), threads_,
        [&](int64_t begin, int64_t end) {
          add_halves(sums, low, bias, how.high_shift, begin, end, how.channels, how.channel_stride);
          if (requantize) {
            write_requantized(*requantize, sums + begin, end - begin, how.channels,
                              how.channel_stride, out + begin, begin);
          }
        },
        kCombineOnTeam);
  }

 private:
  std::unique_ptr<Kernel> high_, low_;
  OutputSpec spec_;
  SplitSums how_;
  int threads_ = 1;
};

}  // namespace

bool int8_products_need_split() {
  return !dnnl_int8_products_exact();
}

std::pair<Tensor, Tensor> split_weights(const Tensor& weights) {
  Tensor high = Tensor::allocate(DataType::kInt8, weights.shape());
  Tensor low = Tensor::allocate(DataType::kInt8, weights.shape());
  const int8_t* w = weights.data<int8_t>();
  int8_t* h = high.data<int8_t>();
  int8_t* l = low.data<int8_t>();
  for (int64_t i = 0; i < weights.element_count(); ++i) {
    h[i] = static_cast<int8_t>(w[i] >> 4);  // Arithmetic shift: floor(w / 16).
    l[i] = static_cast<int8_t>(w[i] & 15);
  }
  return {std::move(high), std::move(low)};
}

std::unique_ptr<Kernel> make_split_sums_kernel(std::unique_ptr<Kernel> high,
                                               std::unique_ptr<Kernel> low, OutputSpec output,
                                               const SplitSums& how, int threads) {
  return std::make_unique<SplitSumsKernel>(std::move(high), std::move(low), std::move(output), how,
                                           threads);
}

}  // namespace cleave::quantize_detail
