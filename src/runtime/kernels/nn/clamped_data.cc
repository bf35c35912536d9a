// The clamped-data int8 convolution's two parts: the clamp before oneDNN's pass, and the sums of
// the values above the clamp.
#include "runtime/kernels/nn/clamped_data.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave::quantize_detail {

namespace {

using conv_detail::ConvProblem;

// Below this many products the excess sums run on one thread.
constexpr int64_t kSerialProducts = 1 << 16;

// out[k·stride] += excess · w[k]: with stride 1 (channels-last sums) a vector loop.
template <bool kContiguous>
void add_scaled_row(int32_t* out, const int8_t* w, int32_t excess, int64_t count, int64_t stride) {
  for (int64_t k = 0; k < count; ++k) out[kContiguous ? k : k * stride] += excess * w[k];
}

__attribute__((target("avx2"))) void add_scaled_row_avx2(int32_t* out, const int8_t* w,
                                                         int32_t excess, int64_t count) {
  for (int64_t k = 0; k < count; ++k) out[k] += excess * w[k];
}

// Copies the data with every value above the clamp made the clamp.
class ClampedData final : public Kernel, public PackedConstants {
 public:
  ClampedData(std::unique_ptr<Kernel> inner, Tensor clamped, std::size_t data)
      : inner_(std::move(inner)), clamped_(std::move(clamped)), data_(data) {}
  std::vector<OutputSpec> output_specs() const override { return inner_->output_specs(); }
  std::string implementation() const override { return inner_->implementation(); }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    const auto* packed = dynamic_cast<const PackedConstants*>(inner_.get());
    return !packed || packed->reads_at_run(input);
  }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const Tensor& given = *inputs[data_];
    if (given.byte_size() != clamped_.byte_size()) {
      throw Error(fmt::format("clamped int8 convolution: the data is {} ({} bytes); expected {}",
                              given.describe(), given.byte_size(), clamped_.byte_size()));
    }
    const auto* from = given.data<uint8_t>();
    auto* to = clamped_.data<uint8_t>();
    const std::size_t bytes = clamped_.byte_size();
    for (std::size_t i = 0; i < bytes; ++i) {
      to[i] = std::min<uint8_t>(from[i], uint8_t{kClampedDataMax});
    }
    std::vector<const Tensor*> clamped_inputs = inputs;
    clamped_inputs[data_] = &clamped_;
    inner_->run(clamped_inputs, outputs, stream);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  Tensor clamped_;
  std::size_t data_;
};

// Up to three spatial dims, unused ones of size 1.
struct Dims {
  int64_t batch = 1, channels_in = 1, channels_out = 1, groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, strides{1, 1, 1},
      dilations{1, 1, 1}, pads{0, 0, 0};
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
};

Dims dims_of(const ConvProblem& p, const Tensor& data) {
  Dims d;
  d.batch = p.batch;
  d.channels_in = p.channels_in;
  d.channels_out = p.channels_out;
  d.groups = p.groups;
  for (std::size_t k = 0; k < p.kernel.size(); ++k) {
    d.in[k] = data.dim(k + 2);
    d.out[k] = p.output_shape[k + 2];
    d.kernel[k] = p.kernel[k];
    d.strides[k] = p.strides[k];
    d.dilations[k] = p.dilations[k];
    d.pads[k] = p.pads_begin[k];
  }
  return d;
}

// One data value above the clamp: where it lies in the data, and by how much it exceeds.
struct Excess {
  int64_t offset;
  int32_t amount;
};

class ExcessSumsKernel final : public Kernel, public PackedConstants {
 public:
  ExcessSumsKernel(const Dims& d, const int8_t* weights, const ExcessSums& how, OutputSpec output,
                   int threads)
      : d_(d), how_(how), spec_(std::move(output)), threads_(threads) {
    // [group][channel in group][tap][output channel in group]: an input value's products with
    // every output channel of its group lie in a row, as channels-last sums do.
    const int64_t per_in = d.channels_in / d.groups, per_out = d.channels_out / d.groups;
    const int64_t taps = d.taps();
    weights_.resize(static_cast<std::size_t>(d.channels_out * per_in * taps));
    for (int64_t g = 0; g < d.groups; ++g) {
      for (int64_t j = 0; j < per_out; ++j) {
        for (int64_t c = 0; c < per_in; ++c) {
          for (int64_t k = 0; k < taps; ++k) {
            weights_[static_cast<std::size_t>(((g * per_in + c) * taps + k) * per_out + j)] =
                weights[((g * per_out + j) * per_in + c) * taps + k];
          }
        }
      }
    }
    avx2_ = vector_isa() != VectorIsa::kBaseline;
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return "int8 sums of data above 127"; }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants: weights copied.
    return input == how_.data;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream&) override {
    collect(inputs[how_.data]->data<uint8_t>(), d_.batch * d_.channels_in * d_.in_plane());
    int32_t* sums = outputs[0]->data<int32_t>();
    std::fill(sums, sums + d_.batch * d_.channels_out * d_.out_plane(), 0);
    if (excess_.empty()) return;
    const int64_t per_out = d_.channels_out / d_.groups;
    const int64_t products = static_cast<int64_t>(excess_.size()) * d_.taps() * per_out;
    elementwise::parallel_for(
        per_out, threads_, [&](int64_t begin, int64_t end) { scatter(sums, begin, end); },
        products < kSerialProducts ? per_out + 1 : 1);
  }

 private:
  // The values above the clamp, 8 bytes at a time (most words have none).
  void collect(const uint8_t* x, int64_t count) {
    excess_.clear();
    constexpr uint64_t kHighBits = 0x8080808080808080ull;
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, x + i, sizeof word);
      if ((word & kHighBits) == 0) continue;
      for (int64_t k = i; k < i + 8; ++k) {
        if (x[k] > kClampedDataMax) excess_.push_back({k, x[k] - kClampedDataMax});
      }
    }
    for (; i < count; ++i) {
      if (x[i] > kClampedDataMax) excess_.push_back({i, x[i] - kClampedDataMax});
    }
  }

  // Adds every excess value's products with output channels [begin, end) of its group.
  void scatter(int32_t* sums, int64_t begin, int64_t end) const {
    const int64_t channels_in = d_.channels_in, in_plane = d_.in_plane();
    const int64_t per_in = channels_in / d_.groups, per_out = d_.channels_out / d_.groups;
    const int64_t out_plane = d_.out_plane(), taps = d_.taps();
    // Between one output channel's sums and the next's.
    const int64_t channel_stride = how_.sums_channels_last ? 1 : out_plane;
    for (const Excess& e : excess_) {
      int64_t n, c, position;
      if (how_.data_channels_last) {
        c = e.offset % channels_in;
        n = e.offset / channels_in / in_plane;
        position = e.offset / channels_in % in_plane;
      } else {
        c = e.offset / in_plane % channels_in;
        n = e.offset / in_plane / channels_in;
        position = e.offset % in_plane;
      }
      const std::array<int64_t, 3> at{position / (d_.in[1] * d_.in[2]),
                                      position / d_.in[2] % d_.in[1], position % d_.in[2]};
      const int64_t group = c / per_in;
      const int8_t* rows = weights_.data() + (c * taps) * per_out;  // c = group·per_in + c'.
      for (int64_t k0 = 0; k0 < d_.kernel[0]; ++k0) {
        const int64_t o0 = output_index(0, at[0], k0);
        if (o0 < 0) continue;
        for (int64_t k1 = 0; k1 < d_.kernel[1]; ++k1) {
          const int64_t o1 = output_index(1, at[1], k1);
          if (o1 < 0) continue;
          for (int64_t k2 = 0; k2 < d_.kernel[2]; ++k2) {
            const int64_t o2 = output_index(2, at[2], k2);
            if (o2 < 0) continue;
            const int64_t out_position = (o0 * d_.out[1] + o1) * d_.out[2] + o2;
            const int64_t first_channel = group * per_out + begin;
            int32_t* out =
                how_.sums_channels_last
                    ? sums + (n * out_plane + out_position) * d_.channels_out + first_channel
                    : sums + (n * d_.channels_out + first_channel) * out_plane + out_position;
            const int8_t* w =
                rows + ((k0 * d_.kernel[1] + k1) * d_.kernel[2] + k2) * per_out + begin;
            if (channel_stride != 1) {
              add_scaled_row<false>(out, w, e.amount, end - begin, channel_stride);
            } else if (avx2_) {
              add_scaled_row_avx2(out, w, e.amount, end - begin);
            } else {
              add_scaled_row<true>(out, w, e.amount, end - begin, 1);
            }
          }
        }
      }
    }
  }

  // The output index along `dim` that reads input index `in` at tap `k`, or -1.
  int64_t output_index(int dim, int64_t in, int64_t k) const {
    const int64_t shifted = in + d_.pads[dim] - k * d_.dilations[dim];
    if (shifted < 0 || shifted % d_.strides[dim] != 0) return -1;
    const int64_t out = shifted / d_.strides[dim];
    return out < d_.out[dim] ? out : -1;
  }

  Dims d_;
  ExcessSums how_;
  OutputSpec spec_;
  int threads_ = 1;
  bool avx2_ = false;
  std::vector<int8_t> weights_;
  std::vector<Excess> excess_;  // Refilled each run; its capacity stays.
};

}  // namespace

std::unique_ptr<Kernel> make_clamped_data_kernel(std::unique_ptr<Kernel> inner, Tensor clamped,
                                                 std::size_t data) {
  return std::make_unique<ClampedData>(std::move(inner), std::move(clamped), data);
}

bool dense_channels_last(const dnnl::memory::desc& layout, std::span<const int64_t> shape) {
  const auto& blocking = layout.data.format_desc.blocking;
  if (layout.data.format_kind != dnnl_blocked || blocking.inner_nblks != 0 || shape.size() < 3) {
    return false;
  }
  int64_t stride = shape[1];
  for (std::size_t d = shape.size() - 1; d >= 2; --d) {
    if (blocking.strides[d] != stride) return false;
    stride *= shape[d];
  }
  return blocking.strides[1] == 1 && blocking.strides[0] == stride;
}

std::unique_ptr<Kernel> make_excess_sums_kernel(const ConvProblem& p, const Tensor& data,
                                                const Tensor& weights, const ExcessSums& how,
                                                OutputSpec output, int threads) {
  return std::make_unique<ExcessSumsKernel>(dims_of(p, data), weights.data<int8_t>(), how,
                                            std::move(output), threads);
}

}  // namespace cleave::quantize_detail
