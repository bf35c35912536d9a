// Chooses and applies the cleave command's default OpenMP spin count (see wait_policy.h).
#include "runtime/wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace cleave {

std::vector<EnvironmentSetting> default_wait_policy(
    const std::function<const char*(const char*)>& lookup) {
  // A user who set either has chosen how threads wait; an empty value counts as a choice too.
  if (lookup("OMP_WAIT_POLICY") != nullptr || lookup("GOMP_SPINCOUNT") != nullptr) return {};
  return {{"GOMP_SPINCOUNT", std::to_string(kDefaultSpinCount)}};
}

void apply_default_wait_policy(char** argv) {
  std::vector<EnvironmentSetting> settings =
      default_wait_policy([](const char* name) { return std::getenv(name); });
  if (settings.empty() || argv == nullptr || argv[0] == nullptr) return;
  for (const EnvironmentSetting& setting : settings) {
    if (setenv(setting.name.c_str(), setting.value.c_str(), 0) != 0) return;
  }
  execv("/proc/self/exe", argv);
  // Still here: no /proc, or the binary is gone. Run on with libgomp's defaults; the variables
  // set above stay for child processes, which is what the user would get on the next start.
}

}  // namespace cleave
