// Default OpenMP wait policy of the cleave command: spin briefly at a barrier, then sleep.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cleave {

/// One environment variable to set.
struct EnvironmentSetting {
  std::string name;
  std::string value;
};

/// Iterations of libgomp's spin loop (one `pause`, ~27 ns on an EPYC of family 26) before a
/// waiting thread sleeps, when the user chose no wait policy: ~30 us, longer than the gaps
/// between cleave's kernels, far shorter than a time slice of another process. libgomp's own
/// default, 300000 (~8 ms here), spins on through the slices in which the awaited thread is not
/// running; docs/results/load.md has the measurements.
inline constexpr long kDefaultSpinCount = 1000;

/// What the cleave command sets before libgomp reads its environment: GOMP_SPINCOUNT, unless the
/// user set OMP_WAIT_POLICY or GOMP_SPINCOUNT (to anything, even empty), in which case nothing.
/// `lookup` returns a variable's value or nullptr when it is unset (std::getenv in the command).
std::vector<EnvironmentSetting> default_wait_policy(
    const std::function<const char*(const char*)>& lookup);

/// Applies default_wait_policy to this process. libgomp reads its environment in a constructor
/// that runs before main(), so a change only counts in a new image: when there is something to
/// set, this sets it and executes /proc/self/exe again with the same arguments (the new image
/// finds the variable set and carries on). Returns when nothing was to be set, or when the
/// exec failed (the process then runs with libgomp's defaults).
void apply_default_wait_policy(char** argv);

}  // namespace cleave
