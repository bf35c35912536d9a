// A machine file as a split's cost model: device count and links checked before any work.
#include "spatial/split_machine.h"

#include <fmt/core.h>

#include "support/error.h"

namespace cleave {

void use_split_machine(const Machine& machine, const std::string& path, int machines,
                       SplitModelOptions& options) {
  if (static_cast<int>(machine.size()) != machines) {
    throw Error(fmt::format("{}: devices: has {} devices, but --nodes is {}", path, machine.size(),
                            machines));
  }
  for (int from = 0; from < machines; ++from) {
    for (int to = 0; to < machines; ++to) {
      if (from == to || machine.bandwidth.at(from).at(to) > 0) continue;
      throw Error(fmt::format(
          "{}: bandwidth[{}][{}]: machines {} and {} have no link (0 means no link), but a "
          "split sends regions between all its machines: expected bytes/s > 0",
          path, from, to, from, to));
    }
  }
  options.cost.speeds.clear();
  for (const Device& device : machine.devices) options.cost.speeds.push_back(device.speed);
  options.cost.bandwidth = machine.bandwidth;
  options.cost.latency = machine.latency;
  options.split.speeds = options.cost.speeds;
}

}  // namespace cleave
