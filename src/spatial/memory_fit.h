// Whether a split keeps each machine's weights within the memory its machine file gives it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "machine/machine.h"

namespace cleave {

/// Empty when every machine m's weights (`weight_bytes[m]`) fit its device's memory_bytes;
/// else the first machine that does not, named with both byte counts ("machine 1 ('rank1')
/// would hold 2097152 bytes of weights, its memory_bytes is 1048576").
std::string weights_over_memory(const std::vector<int64_t>& weight_bytes, const Machine& machine);

}  // namespace cleave
