// The CPU's model as the system names it, for `cleave info` and for caches of measured rates.
#pragma once

#include <string>

namespace cleave {

/// The CPU as /proc/cpuinfo names it (its first "model name" and "cpu family").
struct CpuModel {
  std::string name;    ///< Empty where /proc/cpuinfo has none.
  std::string family;  ///< Empty where /proc/cpuinfo has none.
};
CpuModel cpu_model();

}  // namespace cleave
