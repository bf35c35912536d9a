// How convolutions compute, as a name planning and cost code can use without oneDNN's headers.
#pragma once

#include <optional>
#include <string>

namespace cleave {

/// How convolutions compute. No family is fastest on every model, so callers measure
/// (choose_layouts) and every executor of one model gets the same family: the kernels, and so
/// the outputs bit for bit, then agree.
enum class ConvolutionFamily {
  kBlocked,  ///< oneDNN's direct kernels on its 16-channel blocks.
  /// As kBlocked, but 3x3 stride-1 convolutions by Winograd F(2x2, 3x3) (2.25x fewer
  /// multiplications): oneDNN's kernel on AVX-512, cleave's own on AVX2 (winograd_available).
  kWinograd,
  /// A convolution on a plain 4-D input computes in channels-last (brgconv), and that layout
  /// flows downstream.
  kChannelsLast,
};

/// Whether the Winograd family has a kernel here: oneDNN's under an effective AVX-512 ISA,
/// cleave's own where the vector path is AVX2 (ONEDNN_MAX_CPU_ISA caps both); none below.
bool winograd_available();

/// "blocked", "winograd" or "channels-last".
const char* to_string(ConvolutionFamily family);
/// The family a to_string name stands for; nullopt for any other text.
std::optional<ConvolutionFamily> parse_convolution_family(const std::string& name);

}  // namespace cleave
