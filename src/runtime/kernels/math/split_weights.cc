// The split-weights int8 kernel: two oneDNN int32 sums added and requantized exactly.
#include "runtime/kernels/math/split_weights.h"

#include <omp.h>

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

// 2^shift·high + low + bias in place of high (no low: 0), in runs of one channel (plain) or across
// the channels (channels-last), so that the inner loops vectorise.
template <bool kLow>
void add_halves(int32_t* sums, const int32_t* low, const int32_t* bias, int shift, int64_t begin,
                int64_t end, int64_t channels, int64_t stride) {
  int64_t channel = (begin / stride) % channels;
  for (int64_t i = begin; i < end; channel = channel + 1 == channels ? 0 : channel + 1) {
    if (stride == 1) {
      const int64_t run = std::min(end - i, channels - channel);
      for (int64_t k = 0; k < run; ++k) {
        sums[i + k] =
            (sums[i + k] << shift) + (kLow ? low[i + k] : 0) + (bias ? bias[channel + k] : 0);
      }
      channel += run - 1;
      i += run;
    } else {
      const int64_t run = std::min(end - i, stride - i % stride);
      const int32_t add = bias ? bias[channel] : 0;
      for (int64_t k = 0; k < run; ++k) {
        sums[i + k] = (sums[i + k] << shift) + (kLow ? low[i + k] : 0) + add;
      }
      i += run;
    }
  }
}

// The same for plain sums of `plane` positions per channel and channels-last `low`: sum i of
// channel c at position p adds low[p·channels + c] of its image.
void add_transposed(int32_t* sums, const int32_t* low, const int32_t* bias, int shift,
                    int64_t begin, int64_t end, int64_t channels, int64_t plane) {
  for (int64_t i = begin; i < end;) {
    const int64_t image = i / (channels * plane), channel = i / plane % channels;
    const int64_t position = i % plane, run = std::min(end - i, plane - position);
    const int32_t* from = low + (image * plane + position) * channels + channel;
    const int32_t add = bias ? bias[channel] : 0;
    for (int64_t k = 0; k < run; ++k) {
      sums[i + k] = (sums[i + k] << shift) + from[k * channels] + add;
    }
    i += run;
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
        threads_(threads),
        team_part_(dynamic_cast<TeamPartSums*>(low_.get())) {}

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
    TeamPartSums::Prepared low = TeamPartSums::Prepared::kWhole;
    if (team_part_) {
      low = team_part_->prepare(inputs, low_sums, stream);
    } else {
      low_->run(inputs, {&low_sums}, stream);
    }
    stream.wait();
    int32_t* sums = high->data<int32_t>();
    int32_t* low_data = low_sums.data<int32_t>();
    const int32_t* bias = how_.bias ? inputs[*how_.bias]->data<int32_t>() : nullptr;
    std::optional<Requantize> requantize;
    if (how_.y_scale) requantize = requantize_of(inputs, how_.channels, *how_.y_scale);
    auto* out = static_cast<uint8_t*>(outputs[0]->raw());
    const SplitSums& how = how_;
    const int64_t count = high->element_count();
    const bool channels_last = how.channel_stride == 1;
    // Channels-last sums of one part (high_shift 0) take the other's where they lie; plain ones
    // take them from channels-last sums in low_sums' buffer, added transposed.
    const bool in_place =
        low == TeamPartSums::Prepared::kByUnits && channels_last && how.high_shift == 0;
    // Nothing left to add but the bias: the requantization adds it as it reads the sums.
    const bool bias_only = low == TeamPartSums::Prepared::kNone || in_place;
    const int32_t* requantize_bias =
        bias_only && requantize && how.high_shift == 0 ? bias : nullptr;
    const auto combine = [&](int64_t begin, int64_t end) {
      if (bias_only) {
        if (!requantize_bias) {
          add_halves<false>(sums, nullptr, bias, how.high_shift, begin, end, how.channels,
                            how.channel_stride);
        }
      } else if (low == TeamPartSums::Prepared::kWhole || channels_last) {
        add_halves<true>(sums, low_data, bias, how.high_shift, begin, end, how.channels,
                         how.channel_stride);
      } else {
        add_transposed(sums, low_data, bias, how.high_shift, begin, end, how.channels,
                       how.channel_stride);
      }
      if (requantize) {
        write_requantized(*requantize, sums + begin, end - begin, how.channels, how.channel_stride,
                          out + begin, begin, requantize_bias);
      }
    };
    if (low != TeamPartSums::Prepared::kByUnits) {
      elementwise::parallel_for(count, threads_, combine, kCombineOnTeam);
      return;
    }
    // One region: each member adds the second part's sums of its output channels, then, past
    // the barrier, combines and requantizes its share of the elements.
    const int64_t units = team_part_->units();
    int32_t* target = in_place ? sums : low_data;
    const auto member_work = [&](int64_t member, int64_t members) {
      // Units in pairs: 16 channels, a 64-byte line of channels-last int32 sums.
      const int64_t per = ((units + 1) / 2 + members - 1) / members * 2;
      const int64_t first = std::min(units, member * per), last = std::min(units, first + per);
      if (first < last) team_part_->add_units(target, first, last, !in_place);
    };
    const int team = count < kCombineOnTeam ? 1 : threads_;
    if (team <= 1) {
      member_work(0, 1);
      combine(0, count);
      return;
    }
#pragma omp parallel num_threads(team)
    {
      const int64_t members = omp_get_num_threads(), member = omp_get_thread_num();
      member_work(member, members);
#pragma omp barrier
      // parallel_for's chunks: multiples of 16 elements.
      const int64_t chunk = ((count + members - 1) / members + 15) & ~int64_t{15};
      const int64_t begin = std::min(count, member * chunk);
      const int64_t end = std::min(count, begin + chunk);
      if (begin < end) combine(begin, end);
    }
  }

 private:
  std::unique_ptr<Kernel> high_, low_;
  OutputSpec spec_;
  SplitSums how_;
  int threads_ = 1;
  TeamPartSums* team_part_ = nullptr;  // low_ when it adds its sums in the combining pass.
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
