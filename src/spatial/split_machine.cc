// Machines and splits: a machine file as a split's cost model, a split's links as a machine's.
#include "spatial/split_machine.h"

#include <memory>

#include <fmt/core.h>

#include "frontend/model_plan.h"
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
  options.cost.machine = std::make_shared<const Machine>(machine);
  options.split.speeds = options.cost.speeds;
}

void use_split_links(const SplitCostModel& links, Machine& machine) {
  const std::size_t n = machine.size();
  machine.shared_memory = false;  // Ranks are processes: values travel as messages.
  machine.bandwidth.assign(n, std::vector<double>(n, links.bytes_per_second));
  machine.latency.assign(n, std::vector<double>(n, links.latency_seconds));
  for (std::size_t d = 0; d < n; ++d) {
    machine.bandwidth[d][d] = 0;
    machine.latency[d][d] = 0;
  }
}

Machine ranks_without_machine_file(int ranks, int threads_each) {
  Machine machine = cpu_workers(ranks, threads_each);
  use_split_links(SplitCostModel{}, machine);
  return machine;
}

}  // namespace cleave
