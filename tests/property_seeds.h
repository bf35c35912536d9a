// The step between the seeds a property test checks: every seed, or every fourth under ASan.
#pragma once

#include <cstdint>

namespace cleave::testing {

// The sanitizer build (ASan and UBSan at -O0) runs the planners and the MILP solves around ten
// times slower than Release (LowerBound's modular graphs: 140 s against 13 s), and it is there
// to find memory errors, not to check a property over every seed: the Release run checks them
// all, and the sanitizer run every fourth.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr uint64_t kPropertySeedStep = 4;
#else
inline constexpr uint64_t kPropertySeedStep = 1;
#endif

}  // namespace cleave::testing
