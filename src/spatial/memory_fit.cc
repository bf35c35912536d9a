// Splits against per-machine memory: H and W splits copy every weight, C splits slice them.
#include "spatial/memory_fit.h"

#include <fmt/core.h>

namespace cleave {

std::string weights_over_memory(const std::vector<int64_t>& weight_bytes, const Machine& machine) {
  for (std::size_t m = 0; m < weight_bytes.size() && m < machine.devices.size(); ++m) {
    const Device& device = machine.devices[m];
    if (static_cast<double>(weight_bytes[m]) <= device.memory_bytes) continue;
    return fmt::format("machine {} ('{}') would hold {} bytes of weights, its memory_bytes is {}",
                       m, device.name, weight_bytes[m], device.memory_bytes);
  }
  return {};
}

}  // namespace cleave
