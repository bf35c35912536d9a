// Test helper: MILP options that print nothing and solve to optimality (within the time limit).
#pragma once

#include "plan/schedule/milp.h"

namespace cleave::testing {

inline MilpOptions quiet_milp() {
  MilpOptions options;
  options.verbosity = 0;
  options.relative_gap = 0;
  return options;
}

}  // namespace cleave::testing
