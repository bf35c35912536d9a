// The clamped-data int8 convolution's two parts: the clamp before oneDNN's pass, and the sums of
// the values above the clamp.
#include "runtime/kernels/nn/clamped_data.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/nn/quantized_conv_loops.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave::quantize_detail {

namespace {

using conv_detail::ConvProblem;
using conv_detail::Int8Geometry;

// Below this many products the excess sums run on one thread.
constexpr int64_t kSerialProducts = 1 << 16;
// What one excess value costs beside oneDNN's products, in those products: (kEntryOverhead +
// taps · (per_out + kRowOverhead)) · kSparseCost. From each convolution of squeezenet1_1_int8
// timed both ways under AVX2 (2026-11-30): 1x1 convolutions of few output channels lose to
// oneDNN's pass from 2-4% of values above 127, 3x3 ones of 64-256 channels from 9-12%.
constexpr int64_t kEntryOverhead = 128;
constexpr int64_t kRowOverhead = 16;
constexpr int64_t kSparseCost = 8;

// out[k] += excess · w[k]: a vector loop.
void add_scaled_row(int32_t* out, const int8_t* w, int32_t excess, int64_t count) {
  for (int64_t k = 0; k < count; ++k) out[k] += excess * w[k];
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
    // The data's shape and layout are the ones this kernel was prepared for (a new shape
    // prepares a new kernel), so its bytes are the copy's.
    const auto* from = inputs[data_]->data<uint8_t>();
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

// One data value above the clamp: where it lies (batch, channel, spatial index per dim), and by
// how much it exceeds.
struct Excess {
  int32_t n, c;
  std::array<int32_t, 3> at;
  int32_t amount;
};

class ExcessSumsKernel final : public Kernel, public PackedConstants {
 public:
  ExcessSumsKernel(const Int8Geometry& d, const int8_t* weights, const ExcessSums& how,
                   OutputSpec output, std::unique_ptr<Kernel> dense, Tensor excess_data,
                   int threads)
      : d_(d),
        how_(how),
        spec_(std::move(output)),
        dense_(std::move(dense)),
        excess_data_(std::move(excess_data)),
        threads_(threads) {
    const int64_t per_in = d.channels_in / d.groups, per_out = d.channels_out / d.groups;
    if (dense_) {
      // oneDNN's products over one excess value's cost.
      dense_from_ = d.batch * d.out_plane() * d.channels_out * per_in * d.taps() /
                    ((kEntryOverhead + d.taps() * (per_out + kRowOverhead)) * kSparseCost);
    }
    // [group][channel in group][tap][output channel in group]: an input value's products with
    // every output channel of its group lie in a row, as channels-last sums do.
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
    // Per dim, the output index that reads input index i at tap k, or -1: no divisions per
    // excess value.
    for (int dim = 0; dim < 3; ++dim) {
      auto& table = outputs_of_[static_cast<std::size_t>(dim)];
      table.resize(static_cast<std::size_t>(d.in[dim] * d.kernel[dim]));
      for (int64_t i = 0; i < d.in[dim]; ++i) {
        for (int64_t k = 0; k < d.kernel[dim]; ++k) {
          const int64_t shifted = i + d.pads[dim] - k * d.dilations[dim];
          const int64_t out = shifted / d.strides[dim];
          table[static_cast<std::size_t>(i * d.kernel[dim] + k)] =
              shifted < 0 || shifted % d.strides[dim] != 0 || out >= d.out[dim]
                  ? -1
                  : static_cast<int32_t>(out);
        }
      }
    }
    avx2_ = vector_isa() != VectorIsa::kBaseline;
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return "int8 sums of data above 127"; }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants: weights copied.
    if (input == how_.data) return true;
    const auto* packed = dynamic_cast<const PackedConstants*>(dense_.get());
    return packed && packed->reads_at_run(input);
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const Tensor& data = *inputs[how_.data];
    if (!collect(data.data<uint8_t>(), dense_ ? dense_from_ : -1)) {
      run_dense(inputs, outputs, stream);
      return;
    }
    const int64_t count = d_.batch * d_.channels_out * d_.out_plane();
    int32_t* out = outputs[0]->data<int32_t>();
    if (excess_.empty()) {
      std::fill(out, out + count, 0);
      return;
    }
    // Plain sums are added channels-last here (each excess value's products a vector), then
    // transposed.
    if (!how_.sums_channels_last) channels_last_sums_.resize(static_cast<std::size_t>(count));
    int32_t* sums = how_.sums_channels_last ? out : channels_last_sums_.data();
    std::fill(sums, sums + count, 0);
    const int64_t per_out = d_.channels_out / d_.groups;
    const int64_t products = static_cast<int64_t>(excess_.size()) * d_.taps() * per_out;
    elementwise::parallel_for(
        per_out, threads_, [&](int64_t begin, int64_t end) { scatter(sums, begin, end); },
        products < kSerialProducts ? per_out + 1 : 1);
    if (!how_.sums_channels_last) to_plain(sums, out);
  }

 private:
  // The values above the clamp of each run of `count` bytes (one position's channels, or one
  // channel's plane), 8 bytes at a time (most words have none).
  template <typename Found>
  static void scan(const uint8_t* x, int64_t count, Found&& found) {
    constexpr uint64_t kHighBits = 0x8080808080808080ull;
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, x + i, sizeof word);
      if ((word & kHighBits) == 0) continue;
      for (int64_t k = i; k < i + 8; ++k) {
        if (x[k] > kClampedDataMax) found(k, x[k] - kClampedDataMax);
      }
    }
    for (; i < count; ++i) {
      if (x[i] > kClampedDataMax) found(i, x[i] - kClampedDataMax);
    }
  }

  // Collects the excess values; false (stopped) past `limit` of them (-1: none).
  bool collect(const uint8_t* x, int64_t limit) {
    excess_.clear();
    const auto limit_passed = [&] {
      return limit >= 0 && static_cast<int64_t>(excess_.size()) > limit;
    };
    const int64_t channels = d_.channels_in, plane = d_.in_plane();
    for (int64_t n = 0; n < d_.batch; ++n) {
      if (how_.data_channels_last) {
        int64_t position = 0;
        for (int32_t i0 = 0; i0 < d_.in[0]; ++i0) {
          for (int32_t i1 = 0; i1 < d_.in[1]; ++i1) {
            for (int32_t i2 = 0; i2 < d_.in[2]; ++i2, ++position) {
              scan(x + (n * plane + position) * channels, channels, [&](int64_t c, int amount) {
                excess_.push_back(
                    {static_cast<int32_t>(n), static_cast<int32_t>(c), {i0, i1, i2}, amount});
              });
              if (limit_passed()) return false;
            }
          }
        }
      } else {
        for (int64_t c = 0; c < channels; ++c) {
          scan(x + (n * channels + c) * plane, plane, [&](int64_t position, int amount) {
            const int64_t row = position / d_.in[2];
            excess_.push_back(
                {static_cast<int32_t>(n),
                 static_cast<int32_t>(c),
                 {static_cast<int32_t>(row / d_.in[1]), static_cast<int32_t>(row % d_.in[1]),
                  static_cast<int32_t>(position % d_.in[2])},
                 amount});
          });
          if (limit_passed()) return false;
        }
      }
    }
    return true;
  }

  // Dense excess: oneDNN's pass over max(x − 127, 0) with the whole weights, exact too (pairs
  // within 128·128·2 of either sign: −32768 fits int16, 128·127·2 = 32512 too).
  void run_dense(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                 dnnl::stream& stream) {
    const auto* from = inputs[how_.data]->data<uint8_t>();
    auto* to = excess_data_.data<uint8_t>();
    const std::size_t bytes = excess_data_.byte_size();
    for (std::size_t i = 0; i < bytes; ++i) {
      to[i] = static_cast<uint8_t>(std::max(from[i], uint8_t{kClampedDataMax}) - kClampedDataMax);
    }
    std::vector<const Tensor*> excess_inputs = inputs;
    excess_inputs[how_.data] = &excess_data_;
    dense_->run(excess_inputs, outputs, stream);
  }

  void to_plain(const int32_t* sums, int32_t* out) const {
    const int64_t channels = d_.channels_out, plane = d_.out_plane();
    for (int64_t n = 0; n < d_.batch; ++n) {
      const int32_t* from = sums + n * plane * channels;
      int32_t* to = out + n * channels * plane;
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < plane; ++i) to[c * plane + i] = from[i * channels + c];
      }
    }
  }

  // Adds every excess value's products with output channels [begin, end) of its group, to
  // channels-last sums.
  void scatter(int32_t* sums, int64_t begin, int64_t end) const {
    const int64_t per_in = d_.channels_in / d_.groups, per_out = d_.channels_out / d_.groups;
    const int64_t out_plane = d_.out_plane(), taps = d_.taps();
    const std::array<int64_t, 3>& kernel = d_.kernel;
    for (const Excess& e : excess_) {
      const int32_t* outputs0 = outputs_of_[0].data() + e.at[0] * kernel[0];
      const int32_t* outputs1 = outputs_of_[1].data() + e.at[1] * kernel[1];
      const int32_t* outputs2 = outputs_of_[2].data() + e.at[2] * kernel[2];
      // e.c = group·per_in + its channel in the group: its rows start at e.c·taps·per_out.
      const int8_t* rows = weights_.data() + (e.c * taps) * per_out + begin;
      int32_t* image = sums + e.n * out_plane * d_.channels_out + (e.c / per_in) * per_out + begin;
      for (int64_t k0 = 0; k0 < kernel[0]; ++k0) {
        if (outputs0[k0] < 0) continue;
        for (int64_t k1 = 0; k1 < kernel[1]; ++k1) {
          if (outputs1[k1] < 0) continue;
          for (int64_t k2 = 0; k2 < kernel[2]; ++k2) {
            if (outputs2[k2] < 0) continue;
            const int64_t position =
                (outputs0[k0] * d_.out[1] + outputs1[k1]) * d_.out[2] + outputs2[k2];
            int32_t* out = image + position * d_.channels_out;
            const int8_t* w = rows + ((k0 * kernel[1] + k1) * kernel[2] + k2) * per_out;
            if (avx2_) {
              add_scaled_row_avx2(out, w, e.amount, end - begin);
            } else {
              add_scaled_row(out, w, e.amount, end - begin);
            }
          }
        }
      }
    }
  }

  Int8Geometry d_;
  ExcessSums how_;
  OutputSpec spec_;
  std::unique_ptr<Kernel> dense_;  // Null: always scattered.
  Tensor excess_data_;
  int64_t dense_from_ = -1;  // Excess values from which dense_ runs.
  int threads_ = 1;
  bool avx2_ = false;
  std::vector<int8_t> weights_;
  std::vector<Excess> excess_;               // Refilled each run; its capacity stays.
  std::vector<int32_t> channels_last_sums_;  // For plain sums.
  std::array<std::vector<int32_t>, 3> outputs_of_;
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
                                                OutputSpec output, std::unique_ptr<Kernel> dense,
                                                Tensor excess_data, int threads) {
  return std::make_unique<ExcessSumsKernel>(conv_detail::int8_geometry_of(p, data),
                                            weights.data<int8_t>(), how, std::move(output),
                                            std::move(dense), std::move(excess_data), threads);
}

}  // namespace cleave::quantize_detail
