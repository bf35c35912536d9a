// Internal to the convolution kernels: Winograd F(2x2, 3x3) of cleave's own on 8-channel blocks
// (AVX2 and FMA), for the CPUs where oneDNN 2.6 has no Winograd kernel (it has one on AVX-512).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <limits>
#include <vector>

namespace cleave {
class ClaimPool;
}

namespace cleave::conv_detail {

/// A 2-D 3x3 stride-1 undilated ungrouped convolution, channels in 8-channel blocks (nChw8c).
struct WinogradProblem {
  int64_t batch = 1, channels_in = 0, channels_out = 0;
  int64_t height = 0, width = 0;          ///< Of the input.
  int64_t out_height = 0, out_width = 0;  ///< Of the output (any padding).
  int64_t pad_top = 0, pad_left = 0;
};

/// What follows the convolution and its bias: the old destination added (a fused sum), then a
/// clamp to [low, high] (Relu: [0, inf); Clip: its bounds; none: unbounded).
struct WinogradEpilogue {
  bool accumulate = false;
  float low = -std::numeric_limits<float>::infinity();
  float high = std::numeric_limits<float>::infinity();
};

/// Whether cleave's own Winograd kernel runs here: the vector path of cleave's own loops is
/// AVX2 (ONEDNN_MAX_CPU_ISA caps it as it caps oneDNN), and oneDNN's channel block is 8.
bool own_winograd_available();

/// F(2x2, 3x3): each 2x2 output tile from a 4x4 input tile with 16 multiplications per channel
/// pair instead of 36. The input and output tiles are transformed on 8 channels at a time; the
/// 16 products are 16 matrix products (tiles x input channels) x (input channels x output
/// channels) of weights transformed once here. Tiles go in chunks sized for the L2 cache, so
/// each chunk's transforms and products stay there; the chunks, or when there are too few the
/// products, are shared among the threads. Every output value is computed by the same sequence
/// of operations whatever the thread count, so the results are the same bit for bit.
class OwnWinograd {
 public:
  /// `weights`: [channels_out][channels_in][3][3], plain.
  OwnWinograd(const WinogradProblem& problem, const float* weights, WinogradEpilogue epilogue);

  /// `bias`: channels_out values or null. With a claim pool the chunks are claimed by its
  /// threads; otherwise `threads` OpenMP threads share them.
  void run(const float* source, const float* bias, float* destination, int threads,
           ClaimPool* pool) const;

  dnnl::memory::desc source() const;       ///< nChw8c of the input's shape.
  dnnl::memory::desc destination() const;  ///< nChw8c of the output's shape.
  int64_t tiles_per_chunk() const { return chunk_; }
  /// Bytes of the transformed weights (16/9 of the given ones, channels padded).
  std::size_t weight_bytes() const { return weights_.size() * sizeof(float); }

  static constexpr const char* kImplementation = "winograd_2x2_3x3:cleave_avx2";

 private:
  void run_chunk(const float* source, const float* bias, float* destination, int64_t image,
                 int64_t chunk, int threads) const;

  WinogradProblem p_;
  WinogradEpilogue epilogue_;
  int64_t in_padded_ = 0, out_padded_ = 0;  // Channels rounded up to 8 and to 16.
  int64_t tiles_high_ = 0, tiles_wide_ = 0, tiles_ = 0, chunk_ = 0, chunks_ = 0;
  std::vector<float> weights_;  // [16][out_padded/16][in_padded][16]
};

}  // namespace cleave::conv_detail
