// The clamped-data int8 convolution's two parts: the clamp before oneDNN's pass, and the sums of
// the values above the clamp.
#include "runtime/kernels/nn/clamped_data.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/math/split_weights.h"
#include "runtime/kernels/nn/quantized_conv_loops.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/staging.h"

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
// Weights up to this many bytes are copied for the rows, each input channel's products with its
// group's output channels at each tap a contiguous row; larger ones are read where oneDNN packed
// them (a 64-byte line a block of 8 output channels, 4x the bytes). The rows of r3d_18_int8's
// convolutions of 0.1-0.4 MiB weights, where most values above 127 lie (the large maps), took
// 1.2-1.6x the time on the packed weights; its 1.7-6.8 MiB ones hold 28.7 of its 31.6 MiB.
constexpr int64_t kRowCopyBytes = 1 << 20;

// out[k] += excess · w[k]: a vector loop.
void add_scaled_row(int32_t* out, const int8_t* w, int32_t excess, int64_t count) {
  for (int64_t k = 0; k < count; ++k) out[k] += excess * w[k];
}

// With AVX2: each weight sign-extended to a dword whose low word vpmaddwd multiplies by the
// excess (at most 128) and whose high word by 0, one operation where vpmulld takes two.
__attribute__((target("avx2"))) void add_scaled_row_avx2(int32_t* out, const int8_t* w,
                                                         int32_t excess, int64_t count) {
  const __m256i scale = _mm256_set1_epi32(excess);
  int64_t k = 0;
  for (; k + 8 <= count; k += 8) {
    const __m256i weights =
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + k)));
    auto* sums = reinterpret_cast<__m256i*>(out + k);
    _mm256_storeu_si256(
        sums, _mm256_add_epi32(_mm256_loadu_si256(sums), _mm256_madd_epi16(weights, scale)));
  }
  for (; k < count; ++k) out[k] += excess * w[k];
}

// out[k] += excess · row[at[k]]: output channel k's weight wherever the packed layout put it.
void add_scaled_gathered(int32_t* out, const int8_t* row, const int64_t* at, int32_t excess,
                         int64_t count) {
  for (int64_t k = 0; k < count; ++k) out[k] += excess * row[at[k]];
}

// The same over `blocks` blocks of 8 output channels whose weights lie 4 bytes apart, at byte
// `byte` of their dwords (oneDNN's AVX2 int8 layouts, OIhw2i8o4i and its kin: 4 input channels
// innermost), block b's dwords at dwords + b·step. vpmaddubsw multiplies each weight by the
// excess (at most 128: an int16 product) and the other 3 bytes of its dword by 0, vpmaddwd adds
// the dword's two int16 into its int32. Two operations a block: shifting each weight out of
// its dword and vpmulld took 1.4x the time of a row copy's loop on r3d_18_int8, this 1.24-1.35x.
__attribute__((target("avx2"))) void add_scaled_blocks_avx2(int32_t* out, const int8_t* dwords,
                                                            int64_t step, int64_t byte,
                                                            int32_t excess, int64_t blocks) {
  const __m256i scale =
      _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(excess) << (8 * byte)));
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < blocks; ++b, dwords += step, out += 8) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dwords));
    const __m256i products = _mm256_madd_epi16(_mm256_maddubs_epi16(scale, w), ones);
    auto* sums = reinterpret_cast<__m256i*>(out);
    _mm256_storeu_si256(sums, _mm256_add_epi32(_mm256_loadu_si256(sums), products));
  }
}

// Per dimension of a blocked layout, each index's offset in elements: outer blocks by the
// dimension's stride, inner blocks by their place among the inner blocks. An element's offset
// is the sum over its dimensions. nullopt for a layout that is not blocked.
std::optional<std::vector<std::vector<int64_t>>> offsets_by_dim(const dnnl::memory::desc& layout) {
  const dnnl_memory_desc_t& d = layout.data;
  if (d.format_kind != dnnl_blocked) return std::nullopt;
  const dnnl_blocking_desc_t& blocking = d.format_desc.blocking;
  std::vector<std::vector<int64_t>> offsets(static_cast<std::size_t>(d.ndims));
  for (int dim = 0; dim < d.ndims; ++dim) {
    int64_t block = 1;  // Of this dimension's indices, how many its inner blocks hold.
    for (int j = 0; j < blocking.inner_nblks; ++j) {
      if (blocking.inner_idxs[j] == dim) block *= blocking.inner_blks[j];
    }
    std::vector<int64_t>& table = offsets[static_cast<std::size_t>(dim)];
    table.resize(static_cast<std::size_t>(d.dims[dim]));
    for (int64_t i = 0; i < d.dims[dim]; ++i) {
      int64_t offset = i / block * blocking.strides[dim], inner_stride = 1, below = 1;
      for (int j = blocking.inner_nblks - 1; j >= 0; --j) {
        if (blocking.inner_idxs[j] == dim) {
          offset += i / below % blocking.inner_blks[j] * inner_stride;
          below *= blocking.inner_blks[j];
        }
        inner_stride *= blocking.inner_blks[j];
      }
      table[static_cast<std::size_t>(i)] = offset;
    }
  }
  return offsets;
}

// Copies the data with every value above the clamp made the clamp.
class ClampedData final : public Kernel, public PackedConstants {
 public:
  ClampedData(std::unique_ptr<Kernel> inner, const Tensor& clamped, std::size_t data,
              std::shared_ptr<ClampedScan> scan, int threads)
      : inner_(std::move(inner)),
        shape_(clamped.shape()),
        layout_(clamped.layout()),
        data_(data),
        scan_(std::move(scan)),
        threads_(threads) {}
  std::vector<OutputSpec> output_specs() const override { return inner_->output_specs(); }
  std::string implementation() const override { return inner_->implementation(); }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    const auto* packed = dynamic_cast<const PackedConstants*>(inner_.get());
    return !packed || packed->reads_at_run(input);
  }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    // The data's shape and layout are the ones this kernel was prepared for (a new shape
    // prepares a new kernel), so its bytes are the copy's. The copy is the thread's, shared by
    // every such kernel it runs (r3d_18_int8 held 3.8 MiB of them, one per node).
    Tensor clamped =
        staging_tensor(StagingSlot::kRewrittenInput, DataType::kUInt8, shape_, layout_);
    // The values above the clamp are listed as the copy reads them, for the excess sums.
    scan_->run(inputs[data_]->data<uint8_t>(), clamped.data<uint8_t>(), threads_);
    std::vector<const Tensor*> clamped_inputs = inputs;
    clamped_inputs[data_] = &clamped;
    inner_->run(clamped_inputs, outputs, stream);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  std::vector<int64_t> shape_;
  std::optional<dnnl::memory::desc> layout_;
  std::size_t data_;
  std::shared_ptr<ClampedScan> scan_;
  int threads_ = 1;
};

// Where the clamped pass's packed weights lie: element (group, output and input channel in the
// group, tap) at start + offset0 + the sum of its indices' offsets.
struct PackedRows {
  std::shared_ptr<Buffer> bytes;
  int64_t offset0 = 0;
  std::vector<int64_t> group_at, out_at, in_at;
  std::array<std::vector<int64_t>, 3> tap_at;
};

class ExcessSumsKernel final : public Kernel, public PackedConstants, public TeamPartSums {
 public:
  ExcessSumsKernel(const Int8Geometry& d, PackedRows weights, const ExcessSums& how,
                   OutputSpec output, std::unique_ptr<Kernel> dense, const Tensor& excess_data,
                   std::shared_ptr<ClampedScan> scan, int threads)
      : d_(d),
        how_(how),
        spec_(std::move(output)),
        dense_(std::move(dense)),
        excess_shape_(excess_data.shape()),
        excess_layout_(excess_data.layout()),
        threads_(threads),
        weights_(std::move(weights)),
        scan_(std::move(scan)) {
    const int64_t per_in = d.channels_in / d.groups, per_out = d.channels_out / d.groups;
    if (dense_) {
      // oneDNN's products over one excess value's cost.
      dense_from_ = d.batch * d.out_plane() * d.channels_out * per_in * d.taps() /
                    ((kEntryOverhead + d.taps() * (per_out + kRowOverhead)) * kSparseCost);
    }
    scan_->set_limit(dense_from_);
    // The rows read the packed weights where they lie, in blocks of 8 output channels 4 bytes
    // apart where the layout has them (AVX2's), else one by one: r3d_18_int8 kept a copy of
    // its 32 MiB of weights for them.
    const std::vector<int64_t>& out_at = weights_.out_at;
    const auto blocks = static_cast<int64_t>(out_at.size() / 8);
    const int64_t step = blocks > 1 ? out_at[8] - out_at[0] : 0;
    bool fit = vector_isa() != VectorIsa::kBaseline && blocks > 0 && out_at[0] % 4 == 0 &&
               step % 4 == 0 && reinterpret_cast<uintptr_t>(weights_.bytes->data()) % 4 == 0 &&
               weights_.bytes->size() % 4 == 0;
    for (int64_t o = 0; fit && o < 8 * blocks; ++o) {
      fit = out_at[static_cast<std::size_t>(o)] == out_at[0] + o / 8 * step + o % 8 * 4;
    }
    if (fit) {
      blocks_ = blocks;
      block_step_ = step;
    }
    avx2_ = vector_isa() != VectorIsa::kBaseline;
    const int64_t taps = d.taps();
    if (d.channels_out * per_in * taps <= kRowCopyBytes) {
      // [group][channel in group][tap][output channel in group].
      copy_.resize(static_cast<std::size_t>(d.channels_out * per_in * taps));
      const auto* packed = reinterpret_cast<const int8_t*>(weights_.bytes->data());
      auto* to = copy_.data();
      for (int64_t g = 0; g < d.groups; ++g) {
        for (int64_t c = 0; c < per_in; ++c) {
          const int64_t channel = weights_.offset0 +
                                  weights_.group_at[static_cast<std::size_t>(g)] +
                                  weights_.in_at[static_cast<std::size_t>(c)];
          for (int64_t k = 0; k < taps; ++k, to += per_out) {
            const int64_t row = channel + tap_offset(k);
            for (int64_t j = 0; j < per_out; ++j) {
              to[j] = packed[row + weights_.out_at[static_cast<std::size_t>(j)]];
            }
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
  }

  std::vector<OutputSpec> output_specs() const override { return {spec_}; }
  std::string implementation() const override { return "int8 sums of data above 127"; }
  // PackedConstants: the rows read the clamped pass's packed weights.
  bool reads_at_run(std::size_t input) const override {
    if (input == how_.data) return true;
    const auto* packed = dynamic_cast<const PackedConstants*>(dense_.get());
    return packed && packed->reads_at_run(input);
  }

  // Alone (the combining pass adds the sums itself: TeamPartSums).
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    const Prepared prepared = prepare(inputs, *outputs[0], stream);
    if (prepared == Prepared::kWhole) return;
    const int64_t count = d_.batch * d_.channels_out * d_.out_plane();
    int32_t* out = outputs[0]->data<int32_t>();
    if (prepared == Prepared::kNone) {
      std::fill(out, out + count, 0);
      return;
    }
    // Plain sums are added channels-last in the thread's staging buffer (each excess value's
    // products a vector), then transposed.
    int32_t* sums =
        how_.sums_channels_last
            ? out
            : reinterpret_cast<int32_t*>(staging_buffer(
                  StagingSlot::kOutput, static_cast<std::size_t>(count) * sizeof(int32_t)));
    const int64_t products = scan_->count() * d_.taps() * per_out();
    elementwise::parallel_for(
        units(), threads_, [&](int64_t begin, int64_t end) { add_units(sums, begin, end, true); },
        products < kSerialProducts ? units() + 1 : 1);
    if (!how_.sums_channels_last) to_plain(sums, out);
  }

  Prepared prepare(const std::vector<const Tensor*>& inputs, Tensor& whole,
                   dnnl::stream& stream) override {
    // Listed by the clamped pass just before (split_weights.h runs it first), else here.
    const auto* data = inputs[how_.data]->data<uint8_t>();
    if (!scan_->take_fresh(data)) scan_->run(data, nullptr, threads_);
    if (!scan_->complete()) {
      run_dense(inputs, {&whole}, stream);
      return Prepared::kWhole;
    }
    return scan_->count() == 0 ? Prepared::kNone : Prepared::kByUnits;
  }

  // Units of 8 output channels of each group.
  int64_t units() const override { return (per_out() + 7) / 8; }

  void add_units(int32_t* sums, int64_t first, int64_t last, bool clear) const override {
    if (clear) {
      // The units' channels of every group at every position (channels-last).
      const int64_t begin = 8 * first, end = std::min(8 * last, per_out());
      const int64_t positions = d_.batch * d_.out_plane();
      for (int64_t position = 0; position < positions; ++position) {
        int32_t* row = sums + position * d_.channels_out;
        for (int64_t g = 0; g < d_.groups; ++g) {
          std::fill(row + g * per_out() + begin, row + g * per_out() + end, 0);
        }
      }
    }
    scatter(sums, first, last);
  }

 private:
  // Dense excess: oneDNN's pass over what the clamp took off with the whole weights, exact too
  // (clamped at 127: pairs within 128·128·2 of either sign, −32768 fits int16, 128·127·2 =
  // 32512 too; paired: one value of a pair at most 255, 255·128).
  void run_dense(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                 dnnl::stream& stream) {
    // The clamped pass is done with the slot (the split kernel runs the two parts in turn).
    Tensor excess_data = staging_tensor(StagingSlot::kRewrittenInput, DataType::kUInt8,
                                        excess_shape_, excess_layout_);
    scan_->excess(inputs[how_.data]->data<uint8_t>(), excess_data.data<uint8_t>(), threads_);
    std::vector<const Tensor*> excess_inputs = inputs;
    excess_inputs[how_.data] = &excess_data;
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

  int64_t per_out() const { return d_.channels_out / d_.groups; }

  // Tap k's offset in the packed weights (k = (k0·kernel[1] + k1)·kernel[2] + k2).
  int64_t tap_offset(int64_t k) const {
    const int64_t k2 = k % d_.kernel[2], k1 = k / d_.kernel[2] % d_.kernel[1];
    const int64_t k0 = k / d_.kernel[2] / d_.kernel[1];
    return weights_.tap_at[0][static_cast<std::size_t>(k0)] +
           weights_.tap_at[1][static_cast<std::size_t>(k1)] +
           weights_.tap_at[2][static_cast<std::size_t>(k2)];
  }

  // Adds every excess value's products with output channels [8·first, 8·last) of its group
  // (the last block may be short), to channels-last sums.
  void scatter(int32_t* sums, int64_t first, int64_t last) const {
    const int64_t per_in = d_.channels_in / d_.groups, per_out = d_.channels_out / d_.groups;
    const int64_t out_plane = d_.out_plane();
    const int64_t begin = 8 * first, end = std::min(8 * last, per_out);
    const int64_t blocks = std::max<int64_t>(0, std::min(last, blocks_) - first);
    const int64_t gathered = begin + 8 * blocks;  // Output channels from here: one by one.
    const int64_t first_block =
        weights_.out_at.empty() ? 0 : weights_.out_at[0] + first * block_step_;
    const std::array<int64_t, 3>& kernel = d_.kernel;
    const auto* packed = reinterpret_cast<const int8_t*>(weights_.bytes->data());
    for (const std::vector<Excess>& list : scan_->lists()) {
      for (const Excess& e : list) {
        const int32_t* outputs0 = outputs_of_[0].data() + e.at[0] * kernel[0];
        const int32_t* outputs1 = outputs_of_[1].data() + e.at[1] * kernel[1];
        const int32_t* outputs2 = outputs_of_[2].data() + e.at[2] * kernel[2];
        const int64_t group = e.c / per_in;
        const int64_t rows = weights_.offset0 + weights_.group_at[static_cast<std::size_t>(group)] +
                             weights_.in_at[static_cast<std::size_t>(e.c % per_in)];
        int32_t* image = sums + e.n * out_plane * d_.channels_out + group * per_out;
        for (int64_t k0 = 0; k0 < kernel[0]; ++k0) {
          if (outputs0[k0] < 0) continue;
          for (int64_t k1 = 0; k1 < kernel[1]; ++k1) {
            if (outputs1[k1] < 0) continue;
            for (int64_t k2 = 0; k2 < kernel[2]; ++k2) {
              if (outputs2[k2] < 0) continue;
              const int64_t position =
                  (outputs0[k0] * d_.out[1] + outputs1[k1]) * d_.out[2] + outputs2[k2];
              int32_t* out = image + position * d_.channels_out;
              if (!copy_.empty()) {
                const int8_t* w = copy_.data() +
                                  ((e.c * kernel[0] + k0) * kernel[1] + k1) * kernel[2] * per_out +
                                  k2 * per_out + begin;
                if (avx2_) {
                  add_scaled_row_avx2(out + begin, w, e.amount, end - begin);
                } else {
                  add_scaled_row(out + begin, w, e.amount, end - begin);
                }
                continue;
              }
              const int64_t row = rows + weights_.tap_at[0][static_cast<std::size_t>(k0)] +
                                  weights_.tap_at[1][static_cast<std::size_t>(k1)] +
                                  weights_.tap_at[2][static_cast<std::size_t>(k2)];
              if (blocks > 0) {
                const int64_t byte = row & 3;  // Block offsets are whole dwords.
                add_scaled_blocks_avx2(out + begin, packed + row + first_block - byte, block_step_,
                                       byte, e.amount, blocks);
              }
              add_scaled_gathered(out + gathered, packed + row, weights_.out_at.data() + gathered,
                                  e.amount, end - gathered);
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
  std::vector<int64_t> excess_shape_;
  std::optional<dnnl::memory::desc> excess_layout_;
  int64_t dense_from_ = -1;  // Excess values from which dense_ runs.
  int threads_ = 1;
  PackedRows weights_;
  bool avx2_ = false;
  std::vector<int8_t> copy_;  // The weights as rows (kRowCopyBytes), or none: packed_ read.
  int64_t blocks_ = 0;        // Blocks of 8 output channels read by add_scaled_blocks_avx2.
  int64_t block_step_ = 0;    // Between one block's weights and the next's.
  std::shared_ptr<ClampedScan> scan_;  // The values above the clamp, listed each run.
  std::array<std::vector<int32_t>, 3> outputs_of_;
};

}  // namespace

std::unique_ptr<Kernel> make_clamped_data_kernel(std::unique_ptr<Kernel> inner,
                                                 const Tensor& clamped, std::size_t data,
                                                 std::shared_ptr<ClampedScan> scan, int threads) {
  return std::make_unique<ClampedData>(std::move(inner), clamped, data, std::move(scan), threads);
}

ScannedData scanned_data(const Tensor& data, bool channels_last) {
  const std::vector<int64_t>& shape = data.shape();
  ScannedData scanned;
  scanned.batch = shape[0];
  scanned.channels = shape[1];
  for (std::size_t k = 2; k < shape.size(); ++k) scanned.in[k - 2] = shape[k];
  scanned.channels_last = channels_last;
  return scanned;
}

bool pairs_adjacent_channels(std::string_view implementation, const dnnl::memory::desc& weights,
                             const ConvProblem& p) {
  const int64_t per_in = p.channels_in / p.groups;
  if (!implementation.starts_with("jit_uni_int8") || per_in % 2 != 0) return false;
  const std::optional<std::vector<std::vector<int64_t>>> offsets = offsets_by_dim(weights);
  const std::size_t in_dim = p.groups > 1 ? 2 : 1;
  if (!offsets || offsets->size() <= in_dim) return false;
  const std::vector<int64_t>& in_at = (*offsets)[in_dim];
  if (static_cast<int64_t>(in_at.size()) != per_in) return false;
  // 4 input channels innermost: channel c at byte c % 4 of its dword.
  for (int64_t c = 0; c < per_in; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (in_at[i] - in_at[i & ~std::size_t{3}] != (c & 3)) return false;
  }
  return true;
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
                                                const PackedCopy& weights, const ExcessSums& how,
                                                OutputSpec output, std::unique_ptr<Kernel> dense,
                                                const Tensor& excess_data,
                                                std::shared_ptr<ClampedScan> scan, int threads) {
  const Int8Geometry d = conv_detail::int8_geometry_of(p, data);
  std::optional<std::vector<std::vector<int64_t>>> offsets = offsets_by_dim(weights.layout);
  const std::size_t spatial = p.kernel.size();
  // oneDNN's weights: [groups,] out, in, taps...: groups only where there are several.
  const bool grouped = d.groups > 1;
  if (!offsets || offsets->size() != spatial + (grouped ? 3 : 2)) return nullptr;
  PackedRows rows;
  rows.bytes = weights.bytes;
  rows.offset0 = weights.layout.data.offset0;
  std::size_t dim = 0;
  rows.group_at = grouped ? (*offsets)[dim++] : std::vector<int64_t>{0};
  rows.out_at = (*offsets)[dim++];
  rows.in_at = (*offsets)[dim++];
  for (std::size_t k = 0; k < 3; ++k) {
    rows.tap_at[k] = k < spatial ? (*offsets)[dim++] : std::vector<int64_t>{0};
  }
  if (static_cast<int64_t>(rows.group_at.size()) != d.groups ||
      static_cast<int64_t>(rows.out_at.size()) != d.channels_out / d.groups ||
      static_cast<int64_t>(rows.in_at.size()) != d.channels_in / d.groups) {
    return nullptr;
  }
  return std::make_unique<ExcessSumsKernel>(d, std::move(rows), how, std::move(output),
                                            std::move(dense), excess_data, std::move(scan),
                                            threads);
}

}  // namespace cleave::quantize_detail
