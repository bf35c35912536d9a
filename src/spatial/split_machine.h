// How a machine file shapes a split: its device speeds and link table in the cost model.
#pragma once

#include <string>

#include "machine/machine.h"
#include "spatial/split_model.h"

namespace cleave {

/// Takes `machine` (read from `path`) as the split's machines: one device per machine, its
/// speed as the machine's share, the bandwidth and latency tables as the links. In a machine
/// file a bandwidth of 0 is the explicit "no link"; a split sends regions between its machines
/// (halos between neighbours, gathers on machine 0), so every pair must be linked. Throws Error
/// naming the file and the field for a device count other than `machines` or a missing link.
void use_split_machine(const Machine& machine, const std::string& path, int machines,
                       SplitModelOptions& options);

/// Links every pair of `machine`'s devices as `links` prices a split's messages: its bandwidth
/// per link and latency per message (by default SplitCostModel's 1 Gbit/s and 100 us, what
/// `cleave split` assumes without a machine file), so that ranks planned without a machine
/// file have their hand-offs priced with the one link model a split uses.
void use_split_links(const SplitCostModel& links, Machine& machine);

/// `ranks` equal CPU devices of `threads_each` threads (this host's kind) linked by
/// use_split_links's defaults: the machine MPI ranks are planned on when no machine file names
/// them (generated rank programs, `mpirun cleave run --plan auto`).
Machine ranks_without_machine_file(int ranks, int threads_each);

}  // namespace cleave
