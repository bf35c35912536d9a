// Names of the convolution families (convolution_family.h).
#include "runtime/convolution_family.h"

#include "runtime/cpu_isa.h"
#include "runtime/kernels/nn/winograd.h"

namespace cleave {

const char* to_string(ConvolutionFamily family) {
  switch (family) {
    case ConvolutionFamily::kBlocked:
      return "blocked";
    case ConvolutionFamily::kWinograd:
      return "winograd";
    case ConvolutionFamily::kChannelsLast:
      return "channels-last";
  }
  return "blocked";
}

bool winograd_available() {
  return isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core) ||
         conv_detail::own_winograd_available();
}

std::optional<ConvolutionFamily> parse_convolution_family(const std::string& name) {
  for (ConvolutionFamily family : {ConvolutionFamily::kBlocked, ConvolutionFamily::kWinograd,
                                   ConvolutionFamily::kChannelsLast}) {
    if (name == to_string(family)) return family;
  }
  return std::nullopt;
}

}  // namespace cleave
